#include "virtualgpu/measure/fit_recording.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "files/bounded_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::vgpu {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr const char* kFormat = "mirrorlab compare measurements";
constexpr int kVersion = 1;
// The largest file read: a recording at the limits below is a few megabytes.
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;
// The largest size a sample may give, bytes (1 PiB).
constexpr double kMaxBytes = 1125899906842624.0;

// The memory sample's bandwidths, by their names in the file.
constexpr std::pair<const char*, double timing::MemorySample::*> kOwnBandwidths[] = {
    {"copy_one", &timing::MemorySample::copy_one},
    {"reduce_one", &timing::MemorySample::reduce_one},
    {"copy_all", &timing::MemorySample::copy_all},
    {"reduce_all", &timing::MemorySample::reduce_all}};
constexpr std::pair<const char*, double timing::MemorySample::*> kPeerBandwidths[] = {
    {"copy_peer_one", &timing::MemorySample::copy_peer_one},
    {"reduce_peer_one", &timing::MemorySample::reduce_peer_one},
    {"copy_peer_all", &timing::MemorySample::copy_peer_all},
    {"reduce_peer_all", &timing::MemorySample::reduce_peer_all}};

// A size as a whole number where it is one (every size measured is).
ordered bytes_json(double bytes) {
  if (bytes >= 0 && bytes <= kMaxBytes && bytes == std::floor(bytes)) {
    return static_cast<std::uint64_t>(bytes);
  }
  return bytes;
}

ordered memory_json(const timing::MemorySample& s) {
  ordered out = {{"bytes", bytes_json(s.bytes)}};
  for (const auto& [name, member] : kOwnBandwidths) out[name] = s.*member;
  for (const auto& [name, member] : kPeerBandwidths) out[name] = s.*member;
  return out;
}

ordered samples_json(const std::vector<timing::AllReduceSample>& samples) {
  ordered out = ordered::array();
  for (const timing::AllReduceSample& s : samples) {
    out.push_back({{"algorithm", s.algorithm},
                   {"devices", s.schedule.ranks},
                   {"bytes", bytes_json(s.schedule.bytes)},
                   {"seconds", s.seconds}});
  }
  return out;
}

// The recording's fields one to a line, and a list's samples one to a line: a file to read and
// to compare with another by eye or with diff.
std::string lines_json(const ordered& root) {
  std::string out = "{\n";
  for (auto it = root.begin(); it != root.end(); ++it) {
    out += "  " + ordered(it.key()).dump() + ": ";
    if (it->is_array()) {
      out += "[";
      for (std::size_t i = 0; i < it->size(); ++i) {
        out += (i == 0 ? "\n    " : ",\n    ") + (*it)[i].dump();
      }
      out += it->empty() ? "]" : "\n  ]";
    } else {
      out += it->dump();
    }
    out += std::next(it) == root.end() ? "\n" : ",\n";
  }
  return out + "}\n";
}

// Reads one recording, saying where in it anything is wrong ("check[3].seconds").
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const { throw RecordingError(file_, what); }

  const json& field(const json& object, const char* name, const std::string& where) const {
    const auto at = object.find(name);
    if (at == object.end()) fail(where + name + " is missing");
    return *at;
  }
  const json& object(const json& parent, const char* name, const std::string& where) const {
    const json& v = field(parent, name, where);
    if (!v.is_object()) fail(where + name + " is not an object ({...})");
    return v;
  }
  const json& array(const json& parent, const char* name) const {
    const json& v = field(parent, name, "");
    if (!v.is_array()) fail(std::string(name) + " is not a list ([...])");
    if (v.size() > kMaxRecordedSamples) {
      fail(std::string(name) + " holds " + std::to_string(v.size()) + " samples, more than " +
           std::to_string(kMaxRecordedSamples));
    }
    return v;
  }
  std::string text(const json& parent, const char* name, const std::string& where) const {
    const json& v = field(parent, name, where);
    if (!v.is_string()) fail(where + name + " is not a string (\"...\")");
    return v.get<std::string>();
  }
  // A finite number in [min, max] (`whole`: a whole one); `zero_ok` lets 0 through whatever min
  // is.
  double number(const json& parent, const char* name, const std::string& where, double min,
                double max, bool zero_ok = false, bool whole = false) const {
    const json& v = field(parent, name, where);
    if (!v.is_number()) fail(where + name + " is not a number");
    const double x = v.get<double>();
    if (zero_ok && x == 0) return 0;
    if (!std::isfinite(x) || x < min || x > max || (whole && x != std::floor(x))) {
      std::ostringstream out;
      out << where << name << ": " << v.dump() << " is not a " << (whole ? "whole " : "")
          << "number from " << (zero_ok ? 0 : min) << " to " << max;
      fail(out.str());
    }
    return x;
  }
  int whole(const json& parent, const char* name, const std::string& where, int min,
            int max) const {
    return static_cast<int>(number(parent, name, where, min, max, false, true));
  }

  timing::MemorySample memory(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where + " is not an object ({...})");
    const std::string at = where + ".";
    timing::MemorySample s;
    s.bytes = number(v, "bytes", at, 1, kMaxBytes);
    for (const auto& [name, member] : kOwnBandwidths) {
      s.*member = number(v, name, at, 1, 1e18);
    }
    for (const auto& [name, member] : kPeerBandwidths) {
      s.*member = number(v, name, at, 1, 1e18, true);
    }
    return s;
  }

  std::vector<timing::MemorySample> memory_list(const json& root, const char* name) const {
    std::vector<timing::MemorySample> out;
    const json& list = array(root, name);
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.push_back(memory(list[i], std::string(name) + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  std::vector<timing::AllReduceSample> samples(const json& root, const char* name, int devices) {
    std::vector<timing::AllReduceSample> out;
    const json& list = array(root, name);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = std::string(name) + "[" + std::to_string(i) + "].";
      if (!list[i].is_object()) fail(where.substr(0, where.size() - 1) + " is not an object");
      const std::string algorithm = text(list[i], "algorithm", where);
      const AllReduceAlgorithm* row = find_all_reduce(algorithm);
      if (row == nullptr || row->schedule == nullptr) {
        fail(where + "algorithm: '" + algorithm + "' is not one of " + modelled_names());
      }
      const int ranks = whole(list[i], "devices", where, 2, devices);
      load_ += static_cast<double>(ranks) * ranks;
      if (load_ > kMaxRecordedLoad) {
        fail(where.substr(0, where.size() - 1) +
             ": the all-reduces so far are on more devices "
             "in all than any recording holds (their devices squared, summed, past " +
             std::to_string(static_cast<long>(kMaxRecordedLoad)) + ")");
      }
      const double bytes = number(list[i], "bytes", where, 1, kMaxBytes);
      const double seconds = number(list[i], "seconds", where, 1e-12, 1e6);
      out.push_back({algorithm, row->schedule(ranks, bytes, 0), seconds});
    }
    return out;
  }

  static std::string modelled_names() {
    std::string names;
    for (const std::string& name : modelled_all_reduce_names()) {
      names += (names.empty() ? "" : ", ") + name;
    }
    return names;
  }

 private:
  std::string file_;
  double load_ = 0;  // the all-reduces' devices squared, summed so far
};

}  // namespace

const char* to_string(FitRecording::Kind kind) {
  return kind == FitRecording::Kind::kFit ? "fit" : "check";
}

std::string write_fit_recording(const FitRecording& r) {
  ordered out = {
      {"format", kFormat},
      {"version", kVersion},
      {"kind", to_string(r.kind)},
      {"date", r.date},
      {"machine", r.machine},
      {"devices",
       {{"count", r.devices}, {"type", r.cuda ? "cuda" : "cpu"}, {"engines", r.engines}}},
      {"interrupted", r.interrupted}};
  if (r.kind == FitRecording::Kind::kFit) {
    out["memory"] = ordered::array();
    for (const timing::MemorySample& s : r.measured.memory) out["memory"].push_back(memory_json(s));
    out["latency"] = samples_json(r.measured.latency);
  } else {
    out["memory_before_and_after"] = ordered::array();
    if (r.memory_before.bytes > 0 && r.memory_after.bytes > 0) {
      out["memory_before_and_after"] = {memory_json(r.memory_before), memory_json(r.memory_after)};
    }
  }
  out["check"] = samples_json(r.measured.check);
  return lines_json(out);
}

FitRecording parse_fit_recording(const std::string& text, const std::string& file_name) {
  Reader in(file_name);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // a parse error, or a number too large (1e400)
    // nlohmann's words after its tag: "parse error at line 3, column 9: syntax error ..."
    const std::string words = e.what();
    const std::size_t tag = words.find("] ");
    in.fail("not JSON (" + (tag == std::string::npos ? words : words.substr(tag + 2)) + ")");
  }
  if (!root.is_object()) in.fail("not a JSON object ({...})");
  if (in.text(root, "format", "") != kFormat) {
    in.fail("its format is not \"" + std::string(kFormat) + "\"");
  }
  const int version = in.whole(root, "version", "", 1, 1 << 30);
  if (version != kVersion) {
    in.fail("version " + std::to_string(version) +
            " was written by a newer mirrorlab (this one reads version " +
            std::to_string(kVersion) + ")");
  }
  FitRecording r;
  const std::string kind = in.text(root, "kind", "");
  if (kind != "fit" && kind != "check") in.fail("kind: '" + kind + "' is not one of fit, check");
  r.kind = kind == "fit" ? FitRecording::Kind::kFit : FitRecording::Kind::kCheck;
  r.date = in.text(root, "date", "");
  r.machine = in.text(root, "machine", "");
  const json& devices = in.object(root, "devices", "");
  r.devices = in.whole(devices, "count", "devices.", 2, kMaxRecordedDevices);
  const std::string type = in.text(devices, "type", "devices.");
  if (type != "cpu" && type != "cuda") {
    in.fail("devices.type: '" + type + "' is not one of cpu, cuda");
  }
  r.cuda = type == "cuda";
  r.engines = in.whole(devices, "engines", "devices.", 0, kMaxRecordedDevices);
  const json& interrupted = in.field(root, "interrupted", "");
  if (!interrupted.is_boolean()) in.fail("interrupted is not true or false");
  r.interrupted = interrupted.get<bool>();
  if (r.kind == FitRecording::Kind::kFit) {
    r.measured.memory = in.memory_list(root, "memory");
    if (r.measured.memory.empty()) in.fail("memory holds no samples: a fit needs them");
    r.measured.latency = in.samples(root, "latency", r.devices);
  } else {
    const std::vector<timing::MemorySample> around =
        in.memory_list(root, "memory_before_and_after");
    if (around.size() != 0 && around.size() != 2) {
      in.fail("memory_before_and_after holds " + std::to_string(around.size()) +
              " samples, not 2 (or none)");
    }
    if (around.size() == 2) {
      r.memory_before = around[0];
      r.memory_after = around[1];
    }
  }
  r.measured.check = in.samples(root, "check", r.devices);
  return r;
}

FitRecording read_fit_recording(const std::string& path) {
  std::string text;
  try {
    text = files::read_bounded_file(path, kMaxFileBytes, "a recording is at most 64 MiB");
  } catch (const files::InputFileError& e) {
    throw RecordingError(path, e.problem());
  }
  return parse_fit_recording(text, path);
}

}  // namespace mirrorlab::vgpu
