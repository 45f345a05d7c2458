#include "app/compare/compare_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "timing/nccl_model.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {
void print_wrapped(const std::string& text, const std::string& prefix, std::size_t width) {
  std::string line;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      std::printf("%s%s\n", prefix.c_str(), line.c_str());
      line.clear();
    }
    line.append(line.empty() ? "" : " ").append(word);
    at = end + 1;
  }
  if (!line.empty()) std::printf("%s%s\n", prefix.c_str(), line.c_str());
}

void print_fit(const timing::Topology& t, const std::vector<timing::MemorySample>& memory) {
  std::printf(
      "#\n# The memory, bytes read plus written per second (GB/s), by working set (every "
      "device's buffers): one engine alone or all at once, reading its own writes or\n"
      "# (peer) another engine's; the model's curves fall with the size (the closest "
      "falling curve to these)\n");
  std::printf("# %11s %10s %10s %10s %10s %10s %10s %10s %10s\n", "working set", "copy, one",
              "add, one", "copy, all", "add, all", "peer copy", "peer add", "peer copy",
              "peer add");
  std::printf("# %11s %10s %10s %10s %10s %10s %10s %10s %10s\n", "", "", "", "", "", "one", "one",
              "all", "all");
  for (const timing::MemorySample& s : memory) {
    std::printf("# %11s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n",
                vgpu::size_label(s.bytes).c_str(), s.copy_one / 1e9, s.reduce_one / 1e9,
                s.copy_all / 1e9, s.reduce_all / 1e9, s.copy_peer_one / 1e9,
                s.reduce_peer_one / 1e9, s.copy_peer_all / 1e9, s.reduce_peer_all / 1e9);
  }
  std::printf(
      "# Engines that run at once: %d; the latencies fitted: %.1f us an all-reduce, %.1f us "
      "a step, %.1f us a move of a step\n#\n",
      t.memory.engines, t.call_latency * 1e6, t.step_latency * 1e6, t.move_latency * 1e6);
}

void print_check(const timing::Topology& model, const std::vector<timing::Prediction>& rows) {
  std::printf("#\n# The model (%s) against measurement: each time the best of the rounds\n",
              model.path.empty() ? model.id.c_str() : model.path.c_str());
  std::map<std::pair<std::string, int>, std::vector<const timing::Prediction*>> groups;
  for (const timing::Prediction& p : rows) groups[{p.algorithm, p.ranks}].push_back(&p);
  // Ordered as the table of algorithms, then by devices.
  std::vector<std::pair<std::string, int>> order;
  for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
    for (const auto& [key, group] : groups) {
      if (key.first == a.name) order.push_back(key);
    }
  }
  int within = 0, total = 0;
  const timing::Prediction* worst = nullptr;
  for (const auto& key : order) {
    std::printf("#\n# %s on %d devices\n", key.first.c_str(), key.second);
    std::printf("%12s %14s %14s %8s  %s\n", "size", "measured(us)", "predicted(us)", "error",
                "slowest step: busiest resource");
    for (const timing::Prediction* p : groups[key]) {
      const bool ok = std::abs(p->error()) <= kModelTolerance;
      within += ok;
      ++total;
      if (worst == nullptr || std::abs(p->error()) > std::abs(worst->error())) worst = p;
      std::printf("%12s %14.1f %14.1f %+7.1f%%%s %s\n", vgpu::size_label(p->bytes).c_str(),
                  p->measured * 1e6, p->predicted * 1e6, 100 * p->error(), ok ? " " : "!",
                  p->bottleneck.c_str());
    }
  }
  std::printf("#\n# Within %.0f%% of the measured time: %d of %d ('!' marks the others)",
              100 * kModelTolerance, within, total);
  if (worst != nullptr) {
    std::printf("; the farthest: %s on %d devices at %s, %+.1f%%", worst->algorithm.c_str(),
                worst->ranks, vgpu::size_label(worst->bytes).c_str(), 100 * worst->error());
  }
  std::printf("\n");
}

void print_memory_drift(const timing::Topology& model, const timing::MemorySample& before,
                        const timing::MemorySample& after) {
  double drift[2];
  try {
    drift[0] = timing::memory_drift(model, before);
    drift[1] = timing::memory_drift(model, after);
  } catch (const std::invalid_argument&) {
    return;
  }
  std::printf(
      "# The memory at the check against the fit, over %s (copy and add, one device and all: the "
      "mean): %+.1f%% before the check, %+.1f%% after it\n",
      vgpu::size_label(before.bytes).c_str(), 100 * drift[0], 100 * drift[1]);
  const double most = std::abs(drift[0]) > std::abs(drift[1]) ? drift[0] : drift[1];
  if (std::abs(most) > kMemoryDriftTolerance) {
    char amount[32];
    std::snprintf(amount, sizeof amount, "%.0f%% %s", 100 * std::abs(most),
                  most < 0 ? "slower" : "faster");
    print_wrapped("This machine's memory is up to " + std::string(amount) +
                      " than when it was fitted (other programs on it, or on the host it "
                      "shares), and the predictions are for the machine as it was: expect them "
                      "off by about as much. 'mirrorlab compare --fit' fits it as it is now.",
                  "# ");
  }
}

void print_preset_prediction(const timing::Topology& t, const std::vector<std::size_t>& sizes) {
  const int ranks = t.ranks();
  std::printf("# Predicted on %s: %s\n# %d GPUs (%d node%s, %s)%s\n", t.id.c_str(), t.title.c_str(),
              ranks, t.nodes, t.nodes == 1 ? "" : "s", to_string(t.fabric),
              t.path.empty() ? "" : (", from " + t.path).c_str());
  std::printf("# Where its numbers come from:\n");
  print_wrapped(t.source);
  if (t.compute.given()) {
    std::printf("# Its compute, kernel by kernel ([compute]):\n");
    print_wrapped(t.compute.source);
  }
  std::printf(
      "#\n# Time of one all-reduce of each size per GPU (us). mirrorlab's algorithms: "
      "alpha-beta over the\n# topology's links, step by step. NCCL: its own tuning "
      "model (NCCL 2.28's tuning.cc), which picks\n# the algorithm and protocol.\n");
  std::printf("%12s", "size");
  std::vector<const vgpu::AllReduceAlgorithm*> modelled;
  for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
    if (a.schedule == nullptr) continue;
    modelled.push_back(&a);
    std::printf(" %14s", std::string(a.name).c_str());
  }
  std::printf(" %14s %-14s %11s\n", "NCCL", "NCCL picks", "NCCL busbw");
  for (const std::size_t bytes : sizes) {
    const double size = static_cast<double>(bytes);
    std::printf("%12s", vgpu::size_label(size).c_str());
    for (const vgpu::AllReduceAlgorithm* a : modelled) {
      const timing::Schedule s = a->schedule(ranks, size, 0);
      if (!timing::cannot_run(s, t).empty()) {
        std::printf(" %14s", "cannot run");
      } else {
        std::printf(" %14.1f", timing::estimate(s, t).seconds * 1e6);
      }
    }
    if (t.has_nccl) {
      const timing::NcclCost c = timing::nccl_choice(t.nccl, ranks, t.nodes, size);
      const std::string picks = std::string(to_string(c.algorithm)) + " " + to_string(c.protocol);
      std::printf(" %14.1f %-14s %8.1f GB/s\n", c.time_us, picks.c_str(),
                  size / (c.time_us * 1e-6) * timing::busbw_factor(ranks) / 1e9);
    } else {
      std::printf(" %14s %-14s %11s\n", "-", "cannot run", "-");
    }
  }
  if (!t.has_nccl) {
    std::printf("# NCCL cannot run on %s: it needs one GPU per rank (TensorFlow falls back)\n",
                t.id.c_str());
  }
  for (const vgpu::AllReduceAlgorithm* a : modelled) {
    const std::string why = vgpu::cannot_run_on(*a, t, ranks);
    if (!why.empty()) print_wrapped(std::string(a->name) + " " + why, "# ");
  }
}

}  // namespace mirrorlab::app
