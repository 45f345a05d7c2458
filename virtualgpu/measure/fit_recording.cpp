#include "virtualgpu/measure/fit_recording.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "files/bounded_file.h"
#include "files/field_words.h"
#include "files/json_fields.h"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::vgpu {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;
using files::JsonFields;
using files::JsonList;

constexpr const char* kFormat = kFitRecordingFormat;
constexpr int kVersion = 1;
// The largest file read: a recording at the limits below is a few megabytes.
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;
// A sample's size and a memory bandwidth (bytes/s) in the ranges a topology file takes
// (timing/topology_file.h), so that a fit's topology reads back.
constexpr double kMaxBytes = timing::kMaxCurveBytes;
constexpr double kMinBandwidth = timing::kMinGBs * 1e9, kMaxBandwidth = timing::kMaxGBs * 1e9;
// A fit's latencies (call, step and move) are fitted to its small all-reduces: at least one each.

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

// Every field's refusal names the field ("check[3].seconds") and the file.
files::FieldFailure refused_in(const std::string& file) {
  return [&file](const std::string& name, const std::string& problem) {
    throw RecordingError(file, name + " " + problem);
  };
}

// A memory sample: its size and bandwidths (a peer bandwidth may be 0: not measured).
timing::MemorySample read_memory(const JsonFields& f) {
  timing::MemorySample s;
  s.bytes = f.real("bytes", 1, kMaxBytes);
  for (const auto& [name, member] : kOwnBandwidths) {
    s.*member = f.real(name, kMinBandwidth, kMaxBandwidth);
  }
  for (const auto& [name, member] : kPeerBandwidths) {
    s.*member = f.real(name, kMinBandwidth, kMaxBandwidth, true);
  }
  return s;
}

std::vector<timing::MemorySample> read_memory_list(const JsonFields& root, const char* name) {
  std::vector<timing::MemorySample> out;
  const JsonList list = root.list(name, kMaxRecordedSamples);
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(read_memory(list.object(i)));
  return out;
}

std::string modelled_names() {
  std::string names;
  for (const std::string& name : modelled_all_reduce_names()) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

// The all-reduces of list `name`, on 2 to `devices` devices each; `load` sums their devices
// squared over every list read.
std::vector<timing::AllReduceSample> read_samples(const JsonFields& root, const char* name,
                                                  int devices, double& load) {
  std::vector<timing::AllReduceSample> out;
  const JsonList list = root.list(name, kMaxRecordedSamples);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonFields f = list.object(i);
    const std::string algorithm = f.text("algorithm");
    const AllReduceAlgorithm* row = find_all_reduce(algorithm);
    if (row == nullptr || row->schedule == nullptr) {
      f.fail("algorithm", files::field_words::not_one_of(algorithm, modelled_names()));
    }
    const int ranks = static_cast<int>(f.integer("devices", 2, devices));
    load += static_cast<double>(ranks) * ranks;
    if (load > kMaxRecordedLoad) {
      list.fail(i,
                "puts the all-reduces so far on more devices in all than any recording holds "
                "(their devices squared, summed, past " +
                    std::to_string(static_cast<long>(kMaxRecordedLoad)) + ")");
    }
    const double bytes = f.real("bytes", 1, kMaxBytes);
    const double seconds = f.real("seconds", 1e-12, 1e6);
    out.push_back({algorithm, row->schedule(ranks, bytes, 0), seconds});
  }
  return out;
}

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
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // a parse error, or a number too large (1e400)
    // nlohmann's words after its tag: "parse error at line 3, column 9: syntax error ..."
    const std::string words = e.what();
    const std::size_t tag = words.find("] ");
    throw RecordingError(
        file_name, "not JSON (" + (tag == std::string::npos ? words : words.substr(tag + 2)) + ")");
  }
  if (!root.is_object()) throw RecordingError(file_name, "not a JSON object ({...})");
  const JsonFields in(root, "", refused_in(file_name));
  if (in.text("format") != kFormat) {
    throw RecordingError(file_name, "its format is not \"" + std::string(kFormat) + "\"");
  }
  const std::int64_t version = in.integer("version", 1, 1 << 30);
  if (version != kVersion) {
    throw RecordingError(file_name,
                         "version " + std::to_string(version) +
                             " was written by a newer mirrorlab (this one reads version " +
                             std::to_string(kVersion) + ")");
  }
  FitRecording r;
  const std::string kind = in.text("kind");
  if (kind != "fit" && kind != "check") {
    in.fail("kind", files::field_words::not_one_of(kind, "fit, check"));
  }
  r.kind = kind == "fit" ? FitRecording::Kind::kFit : FitRecording::Kind::kCheck;
  r.date = in.text("date");
  r.machine = in.text("machine");
  const JsonFields devices = in.object("devices");
  r.devices = static_cast<int>(devices.integer("count", 2, kMaxRecordedDevices));
  const std::string type = devices.text("type");
  if (type != "cpu" && type != "cuda") {
    devices.fail("type", files::field_words::not_one_of(type, "cpu, cuda"));
  }
  r.cuda = type == "cuda";
  r.engines = static_cast<int>(devices.integer("engines", 0, kMaxRecordedDevices));
  r.interrupted = in.flag("interrupted");
  double load = 0;  // the all-reduces' devices squared, summed so far
  if (r.kind == FitRecording::Kind::kFit) {
    r.measured.memory = read_memory_list(in, "memory");
    if (r.measured.memory.empty()) in.fail("memory", "holds no samples: a fit needs them");
    r.measured.latency = read_samples(in, "latency", r.devices, load);
    if (r.measured.latency.size() < kMinLatencySamples) {
      RecordingError e(
          file_name,
          "latency " + files::field_words::too_few(r.measured.latency.size(), kMinLatencySamples) +
              ": a fit needs one small all-reduce at least for each latency it fits (call, step "
              "and move)" +
              (r.interrupted ? ", and this fit was interrupted before it measured them" : ""));
      e.interrupted_too_soon = r.interrupted;
      throw e;
    }
  } else {
    const std::vector<timing::MemorySample> around =
        read_memory_list(in, "memory_before_and_after");
    if (around.size() != 0 && around.size() != 2) {
      in.fail("memory_before_and_after",
              "holds " + std::to_string(around.size()) + " samples, not 2 (or none)");
    }
    if (around.size() == 2) {
      r.memory_before = around[0];
      r.memory_after = around[1];
    }
  }
  r.measured.check = read_samples(in, "check", r.devices, load);
  return r;
}

bool fittable(const FitRecording& r) {
  return r.kind == FitRecording::Kind::kFit && !r.measured.memory.empty() &&
         r.measured.latency.size() >= kMinLatencySamples;
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
