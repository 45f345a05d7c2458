// Faults a class can watch, as they happen on real multi-GPU systems (issue 16):
//   - a straggler: one device computes `factor` times slower; every other replica waits for it
//     at the all-reduce (the wait phase of the timeline);
//   - a device that fails during a step: an error raised on its stream in the middle of a phase
//     (between two steps of the all-reduce, or as its split, forward or backward pass ends). The
//     step stops on every replica, nothing hangs and no replica updates its weights: they stay
//     those after the step before;
//   - a NaN in one replica's gradient: the divergence check names it (replica, layer, tensor,
//     element, step) before the all-reduce, so it never reaches the weights.
// A FaultInjector is one of the strategy's step listeners, told before the others. A step with no
// fault due costs nothing more.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/strategy/step_listener.h"

namespace mirrorlab::core {

class MirroredStrategy;

struct SlowDevice {
  int device = 0;       // /gpu:N
  double factor = 1.0;  // its phases take this many times as long, 1 to Replica::kMaxSlowdown
};

// Where within its step a failing device fails.
enum class FailurePhase { kSplit, kForward, kBackward, kAllReduce };
const char* to_string(FailurePhase phase);  // "split", "forward", "backward", "all-reduce"
FailurePhase parse_failure_phase(std::string_view name);  // std::invalid_argument if unknown

struct DeviceFailure {
  int device = 0;
  std::int64_t step = 1;  // the global training step (1-based) during which it fails
  FailurePhase phase = FailurePhase::kAllReduce;
  // kAllReduce: the all-reduce step (0-based) after whose transfers it fails; -1: the middle one
  int all_reduce_step = -1;
};

struct NanInGradient {
  int device = 0;
  std::int64_t step = 1;  // 1-based
};

struct FaultPlan {
  std::vector<SlowDevice> slow;
  std::vector<DeviceFailure> failures;
  std::vector<NanInGradient> nans;
  bool empty() const { return slow.empty() && failures.empty() && nans.empty(); }
  // The device and step of each, "/gpu:1 3x slower; /gpu:1 fails in step 40 (all-reduce)".
  std::string describe() const;
};

// A device failed in the middle of a step. what(): "/gpu:1 failed in step 40, during the
// all-reduce (its step 2 of 4, reduce-scatter): an error was raised on its stream. Every replica
// stopped the step and none updated its weights: they are those after step 39".
class DeviceFailed : public std::runtime_error {
 public:
  DeviceFailed(std::string device, std::int64_t step, std::string during);
  const std::string& device() const { return device_; }
  std::int64_t step() const { return step_; }
  const std::string& during() const { return during_; }  // "the all-reduce (its step 2 of 4, ...)"

 private:
  std::string device_;
  std::int64_t step_;
  std::string during_;
};

class FaultInjector : public StepListener {
 public:
  // Checks the plan against the strategy's devices (a fault on a device it has not, a slowed CUDA
  // GPU: std::invalid_argument, nothing changed), slows the straggling replicas, and listens to
  // the strategy's steps, before its other listeners. Host thread, between steps.
  void attach(MirroredStrategy& strategy, FaultPlan plan);
  // Stops listening and gives every replica its own speed again.
  void detach();
  const FaultPlan& plan() const { return plan_; }
  // How many failures and NaNs have fired (each fires once).
  int fired() const;

  StepNeeds begin_step(const StepStart& start) override;
  void on_replica_reached(Replica& replica, StepBoundary boundary) override;
  void on_collective_rank_step(Replica& replica, int index, std::string_view phase) override;

 private:
  [[noreturn]] void fail(Replica& replica, const std::string& during);

  MirroredStrategy* strategy_ = nullptr;
  FaultPlan plan_;
  std::vector<bool> fired_failures_, fired_nans_;
  // This step's: set by begin_step on the host thread before the replicas start.
  std::int64_t step_ = 0;  // 1-based
  int all_reduce_steps_ = 0;
  std::optional<DeviceFailure> failure_;
  std::optional<NanInGradient> nan_;
  mutable std::mutex mutex_;  // fired counts, read by any thread
  int fired_ = 0;
};

}  // namespace mirrorlab::core
