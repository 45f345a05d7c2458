// The Compare panel's measurement: the all-reduce algorithms side by side on the same devices,
// in one run. For each algorithm, real training steps (same batches, interleaved round by
// round so a noisy machine favours none) give the time per step and per all-reduce of the
// model's gradients; then `mirrorlab bench allreduce`'s sweep gives algbw/busbw over sizes.
// An algorithm the devices cannot run (NCCL on virtual GPUs) is listed with the reason.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/io/dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/measure/all_reduce_bench.h"

namespace mirrorlab::core {

struct AlgorithmTiming {
  std::string algorithm;  // a name of the table (virtualgpu/collectives/all_reduce_algorithms.h)
  bool available = true;
  std::string reason;             // why not, when !available
  double step_seconds = 0;        // median time of a whole training step
  double all_reduce_seconds = 0;  // median of the step's all-reduce (slowest device's span)
  int steps = 0;                  // measured steps (warm-up not counted)
};

struct AlgorithmComparison {
  std::size_t gradient_bytes = 0;  // per replica: what each training all-reduce sums
  double copy_bandwidth = 0;       // bytes/s of the devices' memory (read + write)
  std::vector<AlgorithmTiming> timings;
  std::vector<vgpu::AllReduceBenchRow> sweep;  // rows of every available algorithm
  std::string error;                           // why the measurement stopped early, or ""
  bool complete = false;
};

struct ComparisonOptions {
  std::vector<std::string> algorithms = vgpu::all_reduce_names();
  int rounds = 6;  // training steps per algorithm after one warm-up step
  std::size_t batch_per_replica = 64;
  vgpu::AllReduceBenchOptions sweep{4096, std::size_t{16} << 20, 4.0, 8, 2};
};

// Runs on `devices` while nothing else does (TrainingSession::post). The strategies are built
// from `strategy` with each algorithm in turn, on top of whatever the devices already hold (an
// OutOfMemoryError ends the measurement with `error` set). `cancelled` is polled between
// measurements; `progress` (optional) sees the result grow.
AlgorithmComparison compare_algorithms(
    const std::vector<vgpu::Device*>& devices, const Dataset& train, StrategyOptions strategy,
    const ComparisonOptions& options, const std::function<bool()>& cancelled = {},
    const std::function<void(const AlgorithmComparison&)>& progress = {});

}  // namespace mirrorlab::core
