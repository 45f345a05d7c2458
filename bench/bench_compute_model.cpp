// The timing model's compute (timing/compute_model.h) on this machine's CPU-backed virtual GPUs:
// one replica's forward, backward and update measured at several batches per replica, the
// model's host cost, rate and bandwidth fitted to some of them, and the batches it was not
// fitted to (64 and 512 a replica, both models) predicted and set beside what was measured.
// A benchmark, not a test (its numbers are this machine's): docs/results.md records a run.
//   build/bench/bench_compute_model [--steps N]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/strategy/replica_compute.h"
#include "core/strategy/step_kernels.h"
#include "timing/compute_model.h"
#include "virtualgpu/devices/device_registry.h"

namespace {

using namespace mirrorlab;

struct Point {
  core::ModelKind model;
  std::size_t batch;
  bool fitted;  // used by the fit; the others are predicted
};

}  // namespace

int main(int argc, char** argv) {
  int steps = 12;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--steps N]  (N measured steps a point, 12 by default)\n",
                   argv[0]);
      return 2;
    }
  }
  if (steps < 3) {
    std::fprintf(stderr, "--steps must be 3 or more\n");
    return 2;
  }
  std::vector<Point> points;
  for (core::ModelKind m : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
    for (std::size_t b : {16, 32, 128, 256, 1024}) points.push_back({m, b, true});
    for (std::size_t b : {64, 512}) points.push_back({m, b, false});
  }
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 8192);
  vgpu::Device& device = *registry.logical_devices().front();
  std::vector<timing::ComputeSample> fit_set;
  std::vector<timing::ComputeSample> all;
  std::printf("# one replica's forward + backward + update on %s, the median of %d steps\n",
              device.name().c_str(), steps);
  for (const Point& p : points) {
    core::StrategyOptions o;
    o.model = p.model;
    core::ReplicaComputeOptions c;
    c.batch_per_replica = p.batch;
    c.steps = steps;
    c.max_seconds = 60;
    const core::ReplicaCompute measured = core::measure_replica_compute(device, o, c);
    timing::ComputeSample s{
        std::string(core::to_string(p.model)) + " at " + std::to_string(p.batch),
        core::step_kernels(p.model, o.optimizer, p.batch), measured.seconds};
    std::printf("#   %-12s %9.3f ms%s\n", s.label.c_str(), s.seconds * 1e3,
                p.fitted ? "  (fitted)" : "");
    std::fflush(stdout);
    if (p.fitted) fit_set.push_back(s);
    all.push_back(s);
  }
  // No launch on a CPU device (a kernel is a function call): the host's cost takes what is fixed.
  // The peaks searched down from: 2 cores of 32 FLOP a cycle at 4 GHz, and 100 GB/s.
  const timing::ComputeSpec spec = timing::fit_compute(fit_set, 0, 100e9, 256e9);
  std::printf("# fitted: host %.1f us a step, rate %.1f GFLOP/s, bandwidth %.1f GB/s\n",
              spec.host * 1e6, spec.rate / 1e9, spec.bandwidth / 1e9);
  std::printf("%-12s %12s %12s %8s %s\n", "step", "measured", "predicted", "error", "");
  int outside = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double predicted = timing::compute_time(all[i].kernels, spec).seconds;
    const double error = predicted / all[i].seconds - 1;
    const bool checked = !points[i].fitted;
    outside += checked && std::abs(error) > 0.25;
    std::printf("%-12s %9.3f ms %9.3f ms %+7.0f%% %s\n", all[i].label.c_str(), all[i].seconds * 1e3,
                predicted * 1e3, 100 * error,
                checked ? (std::abs(error) <= 0.25 ? "checked: within 25%" : "checked: OUTSIDE 25%")
                        : "fitted");
  }
  std::printf("# %d of 4 checked points outside 25%%\n", outside);
  return outside == 0 ? 0 : 1;
}
