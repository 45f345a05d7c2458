// One replica's compute, measured: the forward pass, backward pass and optimizer update of one
// per-replica batch on one device, as MirroredStrategy runs them (its own phase events, so the
// same clock as `mirrorlab train`'s phase table), on a synthetic batch of Fashion-MNIST's shape.
// The timing model puts it beside the predicted all-reduce to give a training step's time on n
// devices (timing/step_time.h). The batch's split and the all-reduce are not counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/strategy/events/run_event.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::core {

struct ReplicaComputeOptions {
  std::size_t batch_per_replica = 64;
  int steps = 30;           // measured steps (after the warm-up)
  int warmup_steps = 2;     // run first, not counted (first-touch of the buffers)
  double max_seconds = 15;  // stop measuring once this much has passed and 3 steps are in
};

struct ReplicaCompute {
  double seconds = 0;  // median over the steps of forward + backward + update
  double forward = 0, backward = 0, update = 0;  // each phase's median
  int steps = 0;                                 // measured
  bool stopped = false;                          // `stop` asked before the steps were done
};

// The same medians from a run's own events (`events` in the order they were recorded, as an
// EventStore keeps them) over the training steps `steps` (0-based, ascending): one sample per
// replica and step, its forward + backward + update; `steps` of the result counts the steps that
// had any. The events are read from the last back to the first step asked for (a step's events
// all come after those of the steps before it: the strategy's steps are synchronous), so a long
// run costs only its recent events. Evaluation is not counted.
ReplicaCompute replica_compute_of(const std::vector<RunEvent>& events,
                                  const std::vector<std::int64_t>& steps);

// Called after each measured step with the steps done and the steps planned.
using ComputeProgress = std::function<void(int done, int planned)>;

// Trains a MirroredStrategy of `strategy`'s model and optimizer on `device` alone for the warm-up
// and measured steps. Throws vgpu::OutOfMemoryError when the model and its batch do not fit the
// device, std::invalid_argument for options that are not positive.
ReplicaCompute measure_replica_compute(vgpu::Device& device, StrategyOptions strategy,
                                       const ReplicaComputeOptions& options,
                                       const ComputeProgress& progress = {},
                                       const std::function<bool()>& stop = {});

}  // namespace mirrorlab::core
