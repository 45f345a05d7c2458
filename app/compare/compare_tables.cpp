#include "app/compare/compare_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "app/output/terminal_width.h"
#include "timing/nccl_model.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {
void print_comment(const std::string& text, const std::string& prefix) {
  print_wrapped(text, prefix, prefix);
}

void print_table_with_words(const std::string& headings, const std::vector<std::string>& figures,
                            const std::string& words_heading, const std::vector<std::string>& words,
                            const std::string& key_heading, const std::vector<std::string>& keys) {
  std::size_t widest = words_heading.size();
  for (const std::string& w : words) widest = std::max(widest, w.size());
  std::size_t figures_width = headings.size();
  for (const std::string& f : figures) figures_width = std::max(figures_width, f.size());
  const bool beside = figures_width + 1 + widest <= static_cast<std::size_t>(terminal_width());
  // Padded to the figures' width where a row's last figure is narrower (a mark's room).
  const auto line = [&](const std::string& left, const std::string& right) {
    if (!beside) return left;
    return left + std::string(figures_width - std::min(figures_width, left.size()), ' ') + " " +
           right;
  };
  std::printf("%s\n", line(headings, words_heading).c_str());
  for (std::size_t i = 0; i < figures.size(); ++i) {
    std::printf("%s\n", line(figures[i], words[i]).c_str());
  }
  if (beside) return;
  std::size_t key_width = key_heading.size();
  for (const std::string& k : keys) key_width = std::max(key_width, k.size());
  const int key = static_cast<int>(key_width);
  std::printf("%*s  %s\n", key, key_heading.c_str(), words_heading.c_str());
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::printf("%*s  %s\n", key, keys[i].c_str(), words[i].c_str());
  }
}

void print_fit(const timing::Topology& t, const std::vector<timing::MemorySample>& memory) {
  std::printf("#\n");
  print_comment(
      "The memory, bytes read plus written per second (GB/s), by working set (every device's "
      "buffers): one engine alone or all at once, reading its own writes or (peer) another "
      "engine's; the model's curves fall with the size (the closest falling curve to these)",
      "# ");
  std::printf("# %11s %15s %15s %15s %15s\n", "", "one engine", "all at once", "peer, one",
              "peer, all");
  std::printf("# %11s %7s %7s %7s %7s %7s %7s %7s %7s\n", "working set", "copy", "add", "copy",
              "add", "copy", "add", "copy", "add");
  for (const timing::MemorySample& s : memory) {
    std::printf("# %11s", vgpu::size_label(s.bytes).c_str());
    for (const double rate : {s.copy_one, s.reduce_one, s.copy_all, s.reduce_all, s.copy_peer_one,
                              s.reduce_peer_one, s.copy_peer_all, s.reduce_peer_all}) {
      // Two decimals where they fit the column's 7 (below 10,000 GB/s), else fewer.
      const double gbs = rate / 1e9;
      std::printf(" %7s", formatted(gbs < 1e4 ? "%.2f" : gbs < 1e5 ? "%.1f" : "%.0f", gbs).c_str());
    }
    std::printf("\n");
  }
  print_comment(
      formatted("Engines that run at once: %s; the latencies fitted: %.1f us an "
                "all-reduce, %.1f us a step, %.1f us a move of a step",
                t.memory.engines > 0 ? std::to_string(t.memory.engines).c_str()
                                     : "one per device",  // 0: as many as there are devices
                t.call_latency * 1e6, t.step_latency * 1e6, t.move_latency * 1e6),
      "# ");
  std::printf("#\n");
}

void print_check(const timing::Topology& model, const std::vector<timing::Prediction>& rows) {
  std::printf("#\n");
  print_comment("The model (" + (model.path.empty() ? model.id : model.path) +
                    ") against measurement: each time the best of the rounds, in us",
                "# ");
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
    std::vector<std::string> figures, words, keys;
    for (const timing::Prediction* p : groups[key]) {
      const bool ok = std::abs(p->error()) <= kModelTolerance;
      within += ok;
      ++total;
      if (worst == nullptr || std::abs(p->error()) > std::abs(worst->error())) worst = p;
      keys.push_back(vgpu::size_label(p->bytes));
      figures.push_back(formatted("%8s %10.1f %10.1f %+7.1f%%%s", keys.back().c_str(),
                                  p->measured * 1e6, p->predicted * 1e6, 100 * p->error(),
                                  ok ? "" : "!"));
      words.push_back(p->bottleneck);
    }
    print_table_with_words(formatted("%8s %10s %10s %8s", "size", "measured", "predicted", "error"),
                           figures, "slowest step: busiest resource", words, "size", keys);
  }
  std::string summary =
      formatted("Within %.0f%% of the measured time: %d of %d ('!' marks the others)",
                100 * kModelTolerance, within, total);
  if (worst != nullptr) {
    summary +=
        formatted("; the farthest: %s on %d devices at %s, %+.1f%%", worst->algorithm.c_str(),
                  worst->ranks, vgpu::size_label(worst->bytes).c_str(), 100 * worst->error());
  }
  std::printf("#\n");
  print_comment(summary, "# ");
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
  print_comment(formatted("The memory at the check against the fit, over %s (copy and add, one "
                          "device and all: the mean): %+.1f%% before the check, %+.1f%% after it",
                          vgpu::size_label(before.bytes).c_str(), 100 * drift[0], 100 * drift[1]),
                "# ");
  const double most = std::abs(drift[0]) > std::abs(drift[1]) ? drift[0] : drift[1];
  if (std::abs(most) > kMemoryDriftTolerance) {
    char amount[32];
    std::snprintf(amount, sizeof amount, "%.0f%% %s", 100 * std::abs(most),
                  most < 0 ? "slower" : "faster");
    print_comment("This machine's memory is up to " + std::string(amount) +
                      " than when it was fitted (other programs on it, or on the host it "
                      "shares), and the predictions are for the machine as it was: expect them "
                      "off by about as much. 'mirrorlab compare --fit' fits it as it is now.",
                  "# ");
  }
}

void print_preset_prediction(const timing::Topology& t, const std::vector<std::size_t>& sizes) {
  const int ranks = t.ranks();
  print_comment("Predicted on " + t.id + ": " + t.title, "# ");
  print_comment(std::to_string(ranks) + " GPUs (" + std::to_string(t.nodes) + " node" +
                    (t.nodes == 1 ? "" : "s") + ", " + to_string(t.fabric) + ")" +
                    (t.path.empty() ? "" : ", from " + t.path),
                "# ");
  std::printf("# Where its numbers come from:\n");
  print_comment(t.source);
  if (t.compute.given()) {
    std::printf("# Its compute, kernel by kernel ([compute]):\n");
    print_comment(t.compute.source);
  }
  std::printf("#\n");
  print_comment(
      "Time of one all-reduce of each size per GPU (us). mirrorlab's algorithms: alpha-beta over "
      "the topology's links, step by step. NCCL: its own tuning model (NCCL 2.28's tuning.cc), "
      "which picks the algorithm and protocol.",
      "# ");
  // Each column as wide as its heading or "cannot run", whichever is wider.
  const auto width = [](std::string_view heading) {
    return static_cast<int>(std::max<std::size_t>(heading.size(), 10));
  };
  std::printf("%8s", "size");
  std::vector<const vgpu::AllReduceAlgorithm*> modelled;
  for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
    if (a.schedule == nullptr) continue;
    modelled.push_back(&a);
    std::printf(" %*s", width(a.name), std::string(a.name).c_str());
  }
  std::printf(" %9s %-11s %10s\n", "NCCL", "NCCL picks", "NCCL busbw");
  for (const std::size_t bytes : sizes) {
    const double size = static_cast<double>(bytes);
    std::printf("%8s", vgpu::size_label(size).c_str());
    for (const vgpu::AllReduceAlgorithm* a : modelled) {
      const timing::Schedule s = a->schedule(ranks, size, 0);
      if (!timing::cannot_run(s, t).empty()) {
        std::printf(" %*s", width(a->name), "cannot run");
      } else {
        std::printf(" %*.1f", width(a->name), timing::estimate(s, t).seconds * 1e6);
      }
    }
    if (t.has_nccl) {
      const timing::NcclCost c = timing::nccl_choice(t.nccl, ranks, t.nodes, size);
      const std::string picks = std::string(to_string(c.algorithm)) + " " + to_string(c.protocol);
      std::printf(" %9.1f %-11s %5.1f GB/s\n", c.time_us, picks.c_str(),
                  size / (c.time_us * 1e-6) * timing::busbw_factor(ranks) / 1e9);
    } else {
      std::printf(" %9s %-11s %10s\n", "-", "cannot run", "-");
    }
  }
  if (!t.has_nccl) {
    print_comment(
        "NCCL cannot run on " + t.id + ": it needs one GPU per rank (TensorFlow falls back)", "# ");
  }
  for (const vgpu::AllReduceAlgorithm* a : modelled) {
    const std::string why = vgpu::cannot_run_on(*a, t, ranks);
    if (!why.empty()) print_comment(std::string(a->name) + " " + why, "# ");
  }
}

}  // namespace mirrorlab::app
