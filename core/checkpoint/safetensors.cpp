#include "core/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

#include "core/checkpoint/shallow_json.h"

namespace mirrorlab::core {
namespace {

using json = nlohmann::json;

// The reference implementation refuses headers over 100 MB; so does this reader.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

void put_u64_le(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::uint64_t get_u64_le(std::string_view bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

// Both skip an empty tensor's copy: its vector's data() may be null, and memcpy from or to null
// is undefined even for 0 bytes.
void append_floats_le(std::string& out, const std::vector<float>& values) {
  if (values.empty()) return;
  const std::size_t at = out.size();
  out.resize(at + values.size() * sizeof(float));
  std::memcpy(out.data() + at, values.data(), values.size() * sizeof(float));
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t i = at; i < out.size(); i += 4) {
      std::swap(out[i], out[i + 3]);
      std::swap(out[i + 1], out[i + 2]);
    }
  }
}

std::vector<float> read_floats_le(std::string_view bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  if (values.empty()) return values;
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  if constexpr (std::endian::native == std::endian::big) {
    for (float& v : values) {
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      u = __builtin_bswap32(u);
      std::memcpy(&v, &u, 4);
    }
  }
  return values;
}

// The elements of `shape`, or nullopt-like max when they overflow.
std::uint64_t elements(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<std::uint64_t>::max() / u) {
      return std::numeric_limits<std::uint64_t>::max();
    }
    n *= u;
  }
  return n;
}

struct Entry {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

Entry read_entry(const std::string& name, const json& info, std::uint64_t data_bytes) {
  const std::string where = "tensor \"" + name + "\"";
  if (!info.is_object()) throw SafetensorsError(where + " is not described by a JSON object");
  const auto dtype = info.find("dtype");
  if (dtype == info.end() || !dtype->is_string()) {
    throw SafetensorsError(where + " has no dtype");
  }
  if (dtype->get<std::string>() != "F32") {
    throw SafetensorsError(where + " has dtype " + dtype->get<std::string>() +
                           "; mirrorlab reads F32 (float32) only");
  }
  Entry e;
  e.name = name;
  const auto shape = info.find("shape");
  if (shape == info.end() || !shape->is_array()) throw SafetensorsError(where + " has no shape");
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<std::int64_t>() >= 0)) {
      throw SafetensorsError(where +
                             " has a shape entry that is not a whole number >= 0: " + d.dump());
    }
    const std::uint64_t u = d.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw SafetensorsError(where + " has a dimension too large: " + d.dump());
    }
    e.shape.push_back(static_cast<std::int64_t>(u));
  }
  const auto offsets = info.find("data_offsets");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    throw SafetensorsError(where + " has no data_offsets [begin, end] of whole numbers");
  }
  e.begin = (*offsets)[0].get<std::uint64_t>();
  e.end = (*offsets)[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_bytes) {
    throw SafetensorsError(where + " has data_offsets [" + std::to_string(e.begin) + ", " +
                           std::to_string(e.end) + "] outside the " + std::to_string(data_bytes) +
                           " bytes of data (truncated?)");
  }
  const std::uint64_t n = elements(e.shape);
  if (n > data_bytes / 4 || n * 4 != e.end - e.begin) {
    throw SafetensorsError(where + " of shape " + shape->dump() + " needs " +
                           (n > data_bytes ? std::string("more") : std::to_string(n * 4)) +
                           " bytes but its data_offsets give " + std::to_string(e.end - e.begin));
  }
  return e;
}

}  // namespace

std::string write_safetensors(const Safetensors& file) {
  json header = json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::uint64_t offset = 0;
  std::set<std::string> names;
  for (const SafetensorsTensor& t : file.tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      throw std::invalid_argument("safetensors: tensor name \"" + t.name +
                                  "\" is empty, reserved or repeated");
    }
    if (elements(t.shape) != t.values.size()) {
      throw std::invalid_argument("safetensors: tensor " + t.name + " has " +
                                  std::to_string(t.values.size()) +
                                  " values, not what its shape holds");
    }
    const std::uint64_t bytes = t.values.size() * sizeof(float);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  put_u64_le(out, text.size());
  out += text;
  for (const SafetensorsTensor& t : file.tensors) append_floats_le(out, t.values);
  return out;
}

Safetensors parse_safetensors(std::string_view bytes) {
  if (bytes.size() < 8) {
    throw SafetensorsError("holds " + std::to_string(bytes.size()) +
                           " bytes, fewer than the 8 of its header length (truncated?)");
  }
  const std::uint64_t header_bytes = get_u64_le(bytes);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    throw SafetensorsError("says its header is " + std::to_string(header_bytes) +
                           " bytes long, but the file holds " + std::to_string(bytes.size()) +
                           " bytes (truncated, or not a safetensors file)");
  }
  const std::string_view header_text = bytes.substr(8, header_bytes);
  const std::string_view data = bytes.substr(8 + header_bytes);
  json header;
  try {
    header = parse_shallow_json(header_text, 3);
  } catch (const std::exception& e) {
    throw SafetensorsError(std::string("has a header that is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw SafetensorsError("has a header that is not a JSON object");
  Safetensors file;
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) throw SafetensorsError("has __metadata__ that is not an object");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) {
          throw SafetensorsError("has __metadata__ \"" + key + "\" that is not text");
        }
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    // No tensor can be named "": it could not be written back (nor loaded by name).
    if (name.empty()) throw SafetensorsError("has a tensor with an empty name");
    entries.push_back(read_entry(name, info, data.size()));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  std::uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin != covered) {
      throw SafetensorsError(
          "has " + std::string(e.begin < covered ? "overlapping tensors" : "a gap") + " at byte " +
          std::to_string(std::min(e.begin, covered)) + " of its data (tensor \"" + e.name + "\")");
    }
    covered = e.end;
  }
  if (covered != data.size()) {
    throw SafetensorsError("has " + std::to_string(data.size() - covered) +
                           " bytes of data that no tensor names");
  }
  for (const Entry& e : entries) {
    file.tensors.push_back(
        {e.name, e.shape, read_floats_le(data.substr(e.begin, e.end - e.begin))});
  }
  return file;
}

}  // namespace mirrorlab::core
