#include "timing/topology_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "files/bounded_file.h"
#include "files/field_words.h"

#ifndef MIRRORLAB_TOPOLOGY_DIR
#define MIRRORLAB_TOPOLOGY_DIR "timing/topologies"
#endif

namespace mirrorlab::timing {
namespace {

namespace words = files::field_words;

constexpr double kGB = 1e9;   // the files' bandwidths are in GB/s (10^9 bytes), as NCCL's
constexpr double kUs = 1e-6;  // and latencies in microseconds

std::string joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

// One table of the file, with its path for messages ("[gpu_link]").
class Reader {
 public:
  Reader(const toml::table& table, std::string file, std::string where)
      : table_(table), file_(std::move(file)), where_(std::move(where)) {}

  [[noreturn]] void fail(const toml::node* node, const std::string& what) const {
    const int line = node ? static_cast<int>(node->source().begin.line) : 0;
    throw TopologyError(file_, line, what);
  }
  // `key` (in this table) and its problem, at `node`'s line.
  [[noreturn]] void refuse(const toml::node* node, std::string_view key,
                           const std::string& problem) const {
    fail(node, joined({"`", key, "`", where_, " ", problem}));
  }
  void only(std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : table_) {
      if (std::find(keys.begin(), keys.end(), key.str()) != keys.end()) continue;
      std::string list;
      for (std::string_view k : keys) list.append(list.empty() ? "" : ", ").append(k);
      const std::vector<std::string> names(keys.begin(), keys.end());
      fail(&value, joined({"unknown key `", key.str(), "`", where_,
                           files::field_words::did_you_mean_key(key.str(), names),
                           " (expected one of: ", list, ")"}));
    }
  }
  bool has(std::string_view key) const { return table_.contains(key); }
  const toml::node* node(std::string_view key) const { return table_.get(key); }

  std::string text(std::string_view key, bool required = true) const {
    const toml::node* n = node(key);
    if (!n) {
      if (required) refuse(nullptr, key, words::missing());
      return "";
    }
    if (!n->is_string()) refuse(n, key, words::not_text());
    return std::string(*n->value<std::string_view>());
  }
  // `unit` follows the range in a refusal ("outside [0.001, 1e+05] GB/s"); `zero_too`: 0 is taken
  // as well (none), whatever `low` is.
  double number(std::string_view key, double low, double high, double fallback,
                bool required = false, std::string_view unit = "", bool zero_too = false) const {
    const toml::node* n = node(key);
    if (!n) {
      if (required) refuse(nullptr, key, words::missing());
      return fallback;
    }
    const std::optional<double> v = n->value<double>();
    if (!v || !n->is_number()) refuse(n, key, words::not_number());
    if (!std::isfinite(*v)) refuse(n, key, words::not_finite(words::number_text(*v)));
    if ((*v < low || *v > high) && !(zero_too && *v == 0)) {
      refuse(n, key,
             joined({words::outside(*v, low, high), unit.empty() ? "" : " ", unit,
                     zero_too ? " (or 0: none)" : ""}));
    }
    // -0.0 as 0: written back, "-0" reads as the integer 0 and would write "0".
    return *v == 0 ? 0.0 : *v;
  }
  int whole(std::string_view key, int low, int high, int fallback, bool required = false) const {
    const double v = number(key, low, high, fallback, required);
    if (v != std::floor(v)) refuse(node(key), key, words::not_whole(words::number_text(v)));
    return static_cast<int>(v);
  }
  bool flag(std::string_view key, bool fallback) const {
    const toml::node* n = node(key);
    if (!n) return fallback;
    if (!n->is_boolean()) refuse(n, key, words::not_flag());
    return *n->value<bool>();
  }
  Reader table(std::string_view key, bool required) const {
    static const toml::table empty;
    const toml::node* n = node(key);
    if (!n) {
      if (required) fail(nullptr, joined({"[", key, "] ", words::missing()}));
      return Reader(empty, file_, joined({" in [", key, "]"}));
    }
    if (!n->is_table()) refuse(n, key, words::not_table(key));
    return Reader(*n->as_table(), file_, joined({" in [", key, "]"}));
  }
  // [[bytes, GB/s], ...], sizes increasing, bandwidths in the range `bandwidth_gbs` takes.
  BandwidthCurve curve(std::string_view key) const {
    const toml::node* n = node(key);
    if (!n) return {};
    const toml::array* points = n->as_array();
    if (!points || points->empty()) {
      fail(n, joined({"`", key, "`", where_, " must be a list of [bytes, GB/s] pairs"}));
    }
    std::vector<std::pair<double, double>> out;
    for (const toml::node& p : *points) {
      const toml::array* pair = p.as_array();
      double x = 0, y = 0;
      if (pair && pair->size() == 2) {
        x = (*pair)[0].value<double>().value_or(0);
        y = (*pair)[1].value<double>().value_or(0);
      }
      // Bounded as `bandwidth_gbs` is (past them, y GB/s in bytes/s could overflow to inf), and
      // the sizes as a recording's samples are.
      if (!(x >= 1 && x <= kMaxCurveBytes) || !(y >= kMinGBs && y <= kMaxGBs) ||
          (!out.empty() && !(x > out.back().first))) {
        fail(&p, joined({"`", key, "`", where_, " must be [bytes, GB/s] pairs: sizes from 1 to ",
                         words::number_text(kMaxCurveBytes), " bytes, increasing; GB/s from ",
                         words::number_text(kMinGBs), " to ", words::number_text(kMaxGBs)}));
      }
      out.emplace_back(x, y * kGB);
    }
    return BandwidthCurve(std::move(out));
  }

 private:
  const toml::table& table_;
  std::string file_, where_;
};

LinkSpec read_link(const Reader& top, std::string_view key, bool required) {
  const Reader r = top.table(key, required);
  r.only({"latency_us", "bandwidth_gbs"});
  LinkSpec link;
  if (!required && !top.has(key)) return link;
  link.latency = r.number("latency_us", 0, kMaxLatencyUs, 0, true, "us") * kUs;
  link.bandwidth = r.number("bandwidth_gbs", kMinGBs, kMaxGBs, 0, true, "GB/s") * kGB;
  return link;
}

Fabric fabric_named(const Reader& r) {
  const std::string name = r.text("fabric");
  for (Fabric f : {Fabric::kSwitch, Fabric::kPairs, Fabric::kHost, Fabric::kSharedMemory}) {
    if (name == to_string(f)) return f;
  }
  r.fail(r.node("fabric"),
         "`fabric` " + words::not_one_of(name, "switch, pairs, host or shared-memory"));
}

}  // namespace

Topology parse_topology(const std::string& text, const std::string& file_name) {
  toml::table root;
  try {
    root = toml::parse(text, file_name);
  } catch (const toml::parse_error& e) {
    throw TopologyError(file_name, static_cast<int>(e.source().begin.line),
                        joined({"not valid TOML: ", e.description()}));
  }
  const Reader r(root, file_name, "");
  r.only({"id", "title", "source", "nodes", "gpus_per_node", "fabric", "flops_tflops",
          "step_latency_us", "move_latency_us", "call_latency_us", "gpu_link", "host_link",
          "network", "memory", "nccl_model", "compute", "peer_access"});
  Topology t;
  t.path = file_name;
  t.id = r.text("id");
  if (t.id.empty() ||
      t.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    r.fail(r.node("id"), "`id` must be lowercase letters, digits and '-', as in \"dgx-h100\"");
  }
  t.title = r.text("title");
  t.source = r.text("source");
  t.nodes = r.whole("nodes", 1, 1024, 1);
  t.gpus_per_node = r.whole("gpus_per_node", 1, 64, 0, true);
  t.fabric = fabric_named(r);
  // Left out: not known (what the fit writes); given, a GPU's.
  t.flops = r.number("flops_tflops", kMinTflops, kMaxTflops, 0, false, "TFLOP/s") * 1e12;
  const bool shared = t.fabric == Fabric::kSharedMemory;
  t.step_latency = r.number("step_latency_us", 0, kMaxLatencyUs, 0, false, "us") * kUs;
  t.move_latency = r.number("move_latency_us", 0, kMaxLatencyUs, 0, false, "us") * kUs;
  t.call_latency = r.number("call_latency_us", 0, kMaxLatencyUs, 0, false, "us") * kUs;
  t.gpu_link = read_link(r, "gpu_link", !shared);
  t.host_link = read_link(r, "host_link", t.fabric == Fabric::kPairs);
  t.network = read_link(r, "network", t.nodes > 1);
  t.peer_access = r.flag("peer_access", t.fabric != Fabric::kHost);
  if (shared && !t.peer_access) {
    r.fail(r.node("peer_access"),
           "`peer_access = false` cannot hold in one shared memory: every device of it reaches "
           "all of it; leave it out");
  }

  const Reader m = r.table("memory", true);
  m.only({"bandwidth_gbs", "copy", "reduce", "copy_one_engine", "reduce_one_engine", "copy_peer",
          "reduce_peer", "copy_peer_one_engine", "reduce_peer_one_engine", "engines"});
  if (m.has("bandwidth_gbs")) {
    const BandwidthCurve one(m.number("bandwidth_gbs", kMinGBs, kMaxGBs, 0, false, "GB/s") * kGB);
    t.memory.copy_all = t.memory.reduce_all = one;
  } else if (!m.has("copy") || !m.has("reduce")) {
    m.fail(nullptr, "[memory] needs `bandwidth_gbs`, or `copy` and `reduce` curves");
  }
  if (m.has("copy")) t.memory.copy_all = m.curve("copy");
  if (m.has("reduce")) t.memory.reduce_all = m.curve("reduce");
  t.memory.copy_one = m.curve("copy_one_engine");
  t.memory.reduce_one = m.curve("reduce_one_engine");
  t.memory.copy_peer_all = m.curve("copy_peer");
  t.memory.reduce_peer_all = m.curve("reduce_peer");
  t.memory.copy_peer_one = m.curve("copy_peer_one_engine");
  t.memory.reduce_peer_one = m.curve("reduce_peer_one_engine");
  if (t.memory.copy_peer_all.empty() != t.memory.reduce_peer_all.empty()) {
    m.fail(nullptr, "[memory] needs both `copy_peer` and `reduce_peer`, or neither");
  }
  t.memory.engines = m.whole("engines", 0, 4096, 0);

  if (r.has("compute")) {
    const Reader c = r.table("compute", false);
    c.only({"launch_us", "host_us", "rate_tflops", "bandwidth_gbs", "peak_fp32_tflops",
            "peak_tf32_tflops", "source"});
    t.compute.launch = c.number("launch_us", 0, kMaxLatencyUs, 0, true, "us") * kUs;
    t.compute.host = c.number("host_us", 0, kMaxLatencyUs, 0, true, "us") * kUs;
    t.compute.rate = c.number("rate_tflops", kMinTflops, kMaxTflops, 0, true, "TFLOP/s") * 1e12;
    t.compute.bandwidth = c.number("bandwidth_gbs", kMinGBs, kMaxGBs, 0, true, "GB/s") * kGB;
    t.compute.peak_fp32 =
        c.number("peak_fp32_tflops", kMinTflops, kMaxTflops, 0, false, "TFLOP/s") * 1e12;
    t.compute.peak_tf32 =
        c.number("peak_tf32_tflops", kMinTflops, kMaxTflops, 0, false, "TFLOP/s") * 1e12;
    t.compute.source = c.text("source");
  }

  t.has_nccl = r.has("nccl_model");
  if (t.has_nccl) {
    const Reader n = r.table("nccl_model", false);
    n.only({"compute_capability", "nvlink", "channels", "channel_gbs", "network_channel_gbs",
            "nvls", "nvls_channels", "intel_cpu"});
    t.nccl.compute_capability = n.whole("compute_capability", 70, 200, 90);
    t.nccl.nvlink = n.flag("nvlink", t.fabric == Fabric::kSwitch || t.fabric == Fabric::kPairs);
    t.nccl.channels = n.whole("channels", 1, 64, 0, true);
    t.nccl.channel_gbs = n.number("channel_gbs", kMinGBs, 1e4, 0, true, "GB/s");
    // 0: none, which a machine of one or two nodes may give (more need it).
    t.nccl.network_channel_gbs =
        n.number("network_channel_gbs", kMinGBs, 1e4, 0, t.nodes > 2, "GB/s", t.nodes <= 2);
    t.nccl.nvls = n.flag("nvls", false);
    t.nccl.nvls_channels = n.whole("nvls_channels", 0, 64, 16);
    t.nccl.intel_cpu = n.flag("intel_cpu", true);
  }
  return t;
}

Topology read_topology(const std::filesystem::path& file) {
  std::string text;
  try {
    text = files::read_bounded_file(file, 1 << 20, "a topology file is a few KiB");
  } catch (const files::InputFileError& e) {
    throw TopologyError(file.string(), 0, e.problem());
  }
  return parse_topology(text, file.string());
}

namespace {

// `text` as a TOML basic string: one line, quotes, backslashes and control characters escaped.
// Not toml++'s own formatting, which writes text holding a newline as a multi-line literal string
// (three single quotes), where a newline right after the opening quotes is dropped when read back.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.append({'\\', c});
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (u < 0x20 || u == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04X", u);
      out.append(escaped);
    } else {
      out.push_back(c);
    }
  }
  return out.append("\"");
}

void write_curve(std::ostringstream& out, const char* key, const BandwidthCurve& c) {
  if (c.empty()) return;
  out << key << " = [";
  for (std::size_t i = 0; i < c.points().size(); ++i) {
    out << (i ? ", " : "") << "[" << c.points()[i].first << ", " << c.points()[i].second / kGB
        << "]";
  }
  out << "]\n";
}

void write_link(std::ostringstream& out, const char* key, const LinkSpec& l) {
  if (!(l.bandwidth > 0)) return;
  out << "\n[" << key << "]\nlatency_us = " << l.latency / kUs
      << "\nbandwidth_gbs = " << l.bandwidth / kGB << "\n";
}

}  // namespace

std::string write_topology(const Topology& t) {
  std::ostringstream out;
  out.precision(9);
  out << "id = " << toml_string(t.id) << "\ntitle = " << toml_string(t.title)
      << "\nsource = " << toml_string(t.source) << "\nnodes = " << t.nodes
      << "\ngpus_per_node = " << t.gpus_per_node << "\nfabric = \"" << to_string(t.fabric)
      << "\"\n";
  if (t.peer_access != (t.fabric != Fabric::kHost)) {
    out << "peer_access = " << (t.peer_access ? "true" : "false") << "\n";
  }
  if (t.flops > 0) out << "flops_tflops = " << t.flops / 1e12 << "\n";
  if (t.step_latency > 0) out << "step_latency_us = " << t.step_latency / kUs << "\n";
  if (t.move_latency > 0) out << "move_latency_us = " << t.move_latency / kUs << "\n";
  if (t.call_latency > 0) out << "call_latency_us = " << t.call_latency / kUs << "\n";
  write_link(out, "gpu_link", t.gpu_link);
  write_link(out, "host_link", t.host_link);
  write_link(out, "network", t.network);
  out << "\n[memory]\n";
  if (t.memory.engines > 0) out << "engines = " << t.memory.engines << "\n";
  write_curve(out, "copy", t.memory.copy_all);
  write_curve(out, "reduce", t.memory.reduce_all);
  write_curve(out, "copy_one_engine", t.memory.copy_one);
  write_curve(out, "reduce_one_engine", t.memory.reduce_one);
  write_curve(out, "copy_peer", t.memory.copy_peer_all);
  write_curve(out, "reduce_peer", t.memory.reduce_peer_all);
  write_curve(out, "copy_peer_one_engine", t.memory.copy_peer_one);
  write_curve(out, "reduce_peer_one_engine", t.memory.reduce_peer_one);
  if (t.compute.given()) {
    const ComputeSpec& c = t.compute;
    out << "\n[compute]\nlaunch_us = " << c.launch / kUs << "\nhost_us = " << c.host / kUs
        << "\nrate_tflops = " << c.rate / 1e12 << "\nbandwidth_gbs = " << c.bandwidth / kGB << "\n";
    if (c.peak_fp32 > 0) out << "peak_fp32_tflops = " << c.peak_fp32 / 1e12 << "\n";
    if (c.peak_tf32 > 0) out << "peak_tf32_tflops = " << c.peak_tf32 / 1e12 << "\n";
    out << "source = " << toml_string(c.source) << "\n";
  }
  if (t.has_nccl) {
    out << "\n[nccl_model]\ncompute_capability = " << t.nccl.compute_capability
        << "\nnvlink = " << (t.nccl.nvlink ? "true" : "false") << "\nchannels = " << t.nccl.channels
        << "\nchannel_gbs = " << t.nccl.channel_gbs
        << "\nnetwork_channel_gbs = " << t.nccl.network_channel_gbs
        << "\nnvls = " << (t.nccl.nvls ? "true" : "false")
        << "\nnvls_channels = " << t.nccl.nvls_channels
        << "\nintel_cpu = " << (t.nccl.intel_cpu ? "true" : "false") << "\n";
  }
  return out.str();
}

std::filesystem::path default_topology_folder() { return MIRRORLAB_TOPOLOGY_DIR; }

NotFittedError::NotFittedError(const std::filesystem::path& file)
    : std::invalid_argument(file.empty() ? std::string("this machine has not been fitted yet")
                                         : "this machine has not been fitted yet (no " +
                                               file.string() + ")"),
      file_(file) {}

std::filesystem::path fitted_topology_file() {
  const auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (std::string file = variable("MIRRORLAB_FIT_FILE"); !file.empty()) return file;
  std::filesystem::path config = variable("XDG_CONFIG_HOME");
  if (config.empty() && !variable("HOME").empty()) {
    config = std::filesystem::path(variable("HOME")) / ".config";
  }
  if (config.empty()) return {};
  return config / "mirrorlab" / (std::string(kFittedTopologyId) + ".toml");
}

std::vector<Topology> load_topologies(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  if (error) throw TopologyError(folder.string(), 0, "cannot be listed: " + error.message());
  std::sort(files.begin(), files.end());
  std::vector<Topology> out;
  for (const auto& f : files) out.push_back(read_topology(f));
  return out;
}

bool names_a_topology_file(const std::string& id_or_file) {
  return id_or_file.find('/') != std::string::npos || id_or_file.ends_with(".toml");
}

Topology find_topology(const std::string& id_or_file, const std::filesystem::path& folder) {
  if (names_a_topology_file(id_or_file)) return read_topology(id_or_file);
  if (id_or_file == kFittedTopologyId) {
    const std::filesystem::path fitted = fitted_topology_file();
    if (fitted.empty() || !std::filesystem::exists(fitted)) throw NotFittedError(fitted);
    return read_topology(fitted);
  }
  std::string ids;
  std::vector<std::string> names{kFittedTopologyId};
  for (Topology& t : load_topologies(folder.empty() ? default_topology_folder() : folder)) {
    if (t.id == id_or_file) return std::move(t);
    ids.append(ids.empty() ? "" : ", ").append(t.id);
    names.push_back(t.id);
  }
  throw std::invalid_argument(
      joined({"no topology \"", id_or_file, "\"",
              files::field_words::did_you_mean(id_or_file, names), ": the presets are ", ids,
              ", this-machine (once fitted), or give a topology file's "
              "path (.toml)"}));
}

}  // namespace mirrorlab::timing
