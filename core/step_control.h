// Stepping through one training step phase by phase, as a class watches it: the replicas stop
// together after the split, after forward, after backward, after each step of the all-reduce and
// after the update, and go on when the viewer says so.
//
// A StepController is attached to a MirroredStrategy (set_step_controller, between steps). While
// it pauses, every phase boundary of a training step is a meeting of all replicas (a barrier);
// the last replica to arrive stops there, holding the others, until advance(). Inside the
// all-reduce the collective's own barrier does that job: the strategy's step observer holds all
// ranks while it waits. When it runs freely, a step costs nothing extra: no barrier, no lock.
//
// Whether a step pauses is decided when the step starts (the replicas must all agree on which
// boundaries are meetings); pause_at_phases(true) takes effect at the next step, while
// run_freely() releases at once and lets the current step finish without stopping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "virtualgpu/barrier.h"
#include "virtualgpu/clock.h"

namespace mirrorlab::core {

// Where within a training step all replicas can stop: after the named phase.
enum class StepBoundary { kSplit, kForward, kBackward, kAllReduceStep, kUpdate };
const char* to_string(StepBoundary boundary);  // "split", "forward", ..., "all-reduce step"

// One moment of a step that every replica has reached.
struct PausePoint {
  std::int64_t step = 0;  // the strategy's 0-based training step
  StepBoundary boundary = StepBoundary::kSplit;
  int all_reduce_step = -1;      // kAllReduceStep: 0-based step of the all-reduce
  int all_reduce_steps = 0;      // kAllReduceStep: steps the all-reduce takes in all
  std::string all_reduce_phase;  // kAllReduceStep: "reduce-scatter", "broadcast", ...
  vgpu::TimePoint time{};        // when the last replica arrived
  // "step 12: after backward", "step 12: all-reduce step 2 of 4 (reduce-scatter)"
  std::string label() const;
};

// How a paused run ends when the viewer stops it (closing the window): training steps throw it
// out of strategy.run() / fit(). A session treats it as a clean stop, not as a failure.
class StepStopped : public std::runtime_error {
 public:
  StepStopped() : std::runtime_error("training stopped by the viewer") {}
};

class StepController {
 public:
  StepController() = default;
  StepController(const StepController&) = delete;
  StepController& operator=(const StepController&) = delete;

  // ---- the viewer's side (any thread) ----
  // Pause at every boundary from the next step on (true), or stop pausing (false, as run_freely).
  void pause_at_phases(bool on);
  bool pausing_at_phases() const;
  // Where all replicas are held now; nullopt while they run (or between steps).
  std::optional<PausePoint> paused_at() const;
  // Releases the replicas to the next boundary. False when they are not paused.
  bool advance();
  // Releases the replicas and pauses next at the end of the current step (after its update); if
  // they are held there already, at the end of the next step.
  void finish_step();
  // No more pauses; releases the replicas now.
  void run_freely();
  // Releases everything at once, for good: a held step ends with StepStopped in every replica,
  // and every later training step throws StepStopped before it starts.
  void stop();
  bool stopped() const;
  // Blocks until the replicas are held (true) or `timeout` passes or stop() is called (false).
  bool wait_until_paused(std::chrono::milliseconds timeout) const;
  // Boundaries at which the replicas have been held so far (a count, for tests and the GUI).
  std::uint64_t pauses() const;

  // ---- the strategy's side ----
  // Host thread, before training step `step` of `num_replicas` replicas is enqueued. Throws
  // StepStopped after stop(). Returns whether this step pauses at its boundaries.
  bool begin_step(int num_replicas, std::int64_t step);
  // Replica thread, in a pausing step: waits until every replica has arrived; the last one runs
  // `all_arrived` (every other replica parked), which is expected to call hold().
  void meet(const std::function<void()>& all_arrived);
  // With every replica parked: stops here while the viewer wants to pause at `point`. Throws
  // StepStopped once stopped (the barrier it runs in then releases the others).
  void hold(const PausePoint& point);
  // A replica failed: release those waiting in meet() (with vgpu::CollectiveAborted).
  void abort_step();

 private:
  enum class Target { kEveryBoundary, kEndOfStep };
  bool should_hold(const PausePoint& point) const;  // mutex_ held
  void release();                                   // mutex_ held

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool pause_requested_ = false;
  bool stopped_ = false;
  Target target_ = Target::kEveryBoundary;
  std::int64_t target_step_ = -1;   // kEndOfStep: the step whose end to pause at
  std::int64_t current_step_ = -1;  // the step begun last
  std::optional<PausePoint> paused_;
  std::uint64_t release_generation_ = 0;
  std::uint64_t pauses_ = 0;
  // This step's meeting place; replaced by begin_step() while no replica runs.
  std::shared_ptr<vgpu::CancellableBarrier> barrier_;
};

}  // namespace mirrorlab::core
