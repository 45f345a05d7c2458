// Gradient packs with overlap against one buffer, on this machine's CPU-backed virtual GPUs, and
// the timing model's step beside each (issue 38): the CNN and the MLP, 64 examples a replica,
// in rounds that interleave the settings (each round starting with the next) so that a drift of
// the machine's speed hits all alike.
//   - measured: the median of the training steps' wall times, every round's steps together;
//   - predicted: the one-buffer runs' step without their all-reduce (the median step less the
//     all-reduce's mean: compute, waits for the slowest replica and the step's own cost, all
//     measured), plus the timing model's all-reduce of each pack on the fitted topology of this
//     machine (`mirrorlab compare --fit`), less what overlap hides (timing/pack_schedule.h, with
//     this machine's concurrency: the cores the replicas leave). The packs' runs are not among
//     its inputs; the one-buffer row's error is the all-reduce model's alone.
// Columns: all-reduce, measured and the model's, per step (every pack); "in bwd": the share of the
// measured all-reduce that ran while the replica's backward still did (on shared cores both then
// go slower: overlap in time, not time saved); "hidden": the share the model takes off the step.
// A benchmark, not a test (its numbers are this machine's): docs/results.md records a run.
//   OPENBLAS_NUM_THREADS=1 build/bench/bench_packs [--rounds R] [--steps S] [--gpus N]
//                                                  [--topology FILE]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/gradient_packs.h"
#include "core/strategy/mirrored_strategy.h"
#include "timing/pack_schedule.h"
#include "timing/step_time.h"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/memory/clock.h"

namespace {

using namespace mirrorlab;

struct Setting {
  const char* name;
  core::PackOptions packs;
};

struct Measured {
  std::vector<double> steps;  // seconds, every round's
  double compute = 0, backward = 0, all_reduce = 0, hidden = 0, per_steps = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `steps` timed training steps (after 2 not timed) on `gpus` devices; adds to `m`.
void run(core::ModelKind model, const core::PackOptions& packs, int gpus, int steps,
         const core::Dataset& data, Measured& m) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(gpus, 1024);
  core::StrategyOptions o;
  o.model = model;
  o.all_reduce = vgpu::kRingName;
  o.packs = packs;
  core::EventStore events;
  core::MirroredStrategy strategy(registry.logical_devices(), o, &events);
  const std::size_t global = 64 * static_cast<std::size_t>(gpus);
  std::vector<std::uint32_t> order(data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  for (int s = 0; s < steps + 2; ++s) {
    const core::GlobalBatch batch{
        &data,
        std::span(order).subspan((static_cast<std::size_t>(s) * global) % data.size(), global), 64};
    const auto begin = vgpu::Clock::now();
    strategy.train_step(batch);
    if (s >= 2) m.steps.push_back(vgpu::seconds_between(begin, vgpu::Clock::now()));
  }
  for (const core::RunEvent& e : events.snapshot()) {
    if (e.step < 2) continue;
    const double t = vgpu::seconds_between(e.begin, e.end);
    if (e.phase == core::Phase::kSplit || e.phase == core::Phase::kForward ||
        e.phase == core::Phase::kBackward || e.phase == core::Phase::kUpdate) {
      m.compute += t / gpus;
    }
    if (e.phase == core::Phase::kBackward) m.backward += t / gpus;
    if (e.phase == core::Phase::kAllReduce) m.all_reduce += t / gpus;
  }
  // What overlap hid, over the timed steps only.
  core::EventStore timed;
  for (const core::RunEvent& e : events.snapshot()) {
    if (e.step >= 2) timed.add(e);
  }
  m.hidden += timed.hidden_all_reduce().hidden / gpus;
  m.per_steps += steps;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 6, steps = 30, gpus = 2;
  std::string topology_file = timing::fitted_topology_file().string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (a == "--gpus" && i + 1 < argc) {
      gpus = std::atoi(argv[++i]);
    } else if (a == "--topology" && i + 1 < argc) {
      topology_file = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--rounds R (6)] [--steps S (30)] [--gpus N (2)] [--topology FILE "
                   "(this machine's fit)]\n",
                   argv[0]);
      return 2;
    }
  }
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    // mirrorlab's own program starts again with it (app/main.cpp); this one only says so. Without
    // it OpenBLAS's own threads take the cores from the devices' and the steps jump between two
    // speeds (docs/results.md, 2026-11-28 17:57).
    std::fprintf(stderr,
                 "warning: OPENBLAS_NUM_THREADS is not set: run it as OPENBLAS_NUM_THREADS=1 %s, "
                 "as mirrorlab runs, or OpenBLAS's threads compete with the devices'\n",
                 argv[0]);
  }
  if (rounds < 1 || steps < 3 || gpus < 2 || gpus > 8) {
    std::fprintf(stderr, "give --rounds 1 or more, --steps 3 or more, --gpus 2 to 8\n");
    return 2;
  }
  timing::Topology topology;
  try {
    topology = timing::find_topology(topology_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "%s\nfit this machine first: mirrorlab compare --fit (or give --topology FILE)\n",
                 e.what());
    return 1;
  }
  const timing::ScheduleMaker ring = vgpu::find_all_reduce(vgpu::kRingName)->schedule;
  const double concurrency = timing::communication_concurrency(topology, gpus);
  std::printf(
      "# %d CPU-backed devices, 64 examples a replica, the %s all-reduce; %d rounds of %d steps "
      "each, the settings interleaved; the model on %s (concurrency with backward %.2f)\n",
      gpus, std::string(vgpu::kRingName).c_str(), rounds, steps, topology_file.c_str(),
      concurrency);
  core::PackOptions packs, after;
  packs.bytes_per_pack = after.bytes_per_pack = 4096;
  after.overlap = false;
  const std::vector<Setting> settings = {{"one buffer", {}},
                                         {"packs 4096 B, overlap", packs},
                                         {"packs 4096 B, after backward", after}};
  for (core::ModelKind model : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
    const core::Dataset data = core::synthetic_dataset(64 * static_cast<std::size_t>(gpus) * 8);
    std::vector<Measured> m(settings.size());
    for (int r = 0; r < rounds; ++r) {
      // Each round starts with another setting, so none is always first or last.
      for (std::size_t k = 0; k < settings.size(); ++k) {
        const std::size_t s = (k + static_cast<std::size_t>(r)) % settings.size();
        run(model, settings[s].packs, gpus, steps, data, m[s]);
      }
      std::fprintf(stderr, "# %s: round %d of %d done\n", core::to_string(model), r + 1, rounds);
    }
    const Measured& base = m[0];
    const double compute = base.compute / base.per_steps;
    const double backward = base.backward / base.per_steps;
    const double without_all_reduce = median(base.steps) - base.all_reduce / base.per_steps;
    std::printf(
        "\n# %s, in the one-buffer runs: the median step less the all-reduce %.2f ms; the phases' "
        "means: compute %.2f ms, backward %.2f ms\n",
        core::to_string(model), 1e3 * without_all_reduce, 1e3 * compute, 1e3 * backward);
    std::printf("%-30s %9s %9s %8s %11s %11s %9s %9s\n", "setting", "measured", "predicted",
                "error", "all-reduce", "(model's)", "in bwd", "hidden");
    for (std::size_t s = 0; s < settings.size(); ++s) {
      const std::vector<core::GradientPack> p = core::gradient_packs_of(model, settings[s].packs);
      const std::vector<timing::PackWork> work = core::pack_work(model, p);
      std::vector<double> seconds;
      for (const timing::PackWork& w : work) {
        seconds.push_back(timing::all_reduce_time(topology, ring, gpus, w.bytes).seconds);
      }
      const timing::PackedAllReduce predicted =
          timing::pack_all_reduce(work, backward, seconds, settings[s].packs.overlap, concurrency);
      const double step = median(m[s].steps);
      const double model_step = without_all_reduce + predicted.exposed;
      std::printf("%-30s %7.2fms %7.2fms %+7.1f%% %9.2fms %9.2fms %8.0f%% %8.0f%%\n",
                  settings[s].name, 1e3 * step, 1e3 * model_step, 100 * (model_step - step) / step,
                  1e3 * m[s].all_reduce / m[s].per_steps, 1e3 * predicted.all_reduce,
                  m[s].all_reduce > 0 ? 100 * m[s].hidden / m[s].all_reduce : 0.0,
                  predicted.all_reduce > 0 ? 100 * predicted.hidden() / predicted.all_reduce : 0.0);
    }
  }
  return 0;
}
