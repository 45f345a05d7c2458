// Stepping through one training step phase by phase, as a class watches it: the replicas stop
// together after the split, after forward, after backward, after each step of the all-reduce and
// after the update, and go on when the viewer says so.
//
// A StepController is one of a MirroredStrategy's step listeners (add_listener, between steps).
// While it pauses, it asks the strategy to make every phase boundary of a training step a
// meeting of all replicas (begin_step returns true); the last replica to arrive runs the
// listeners and then hold(), which stops there, holding the others, until advance(). Inside the
// all-reduce the collective's own barrier holds the ranks the same way. When it runs freely, a
// step costs nothing extra: no meeting, no lock.
//
// Whether a step pauses is decided when the step starts (the replicas must all agree on which
// boundaries are meetings); pause_at_phases(true) takes effect at the next step, while
// run_freely() releases at once and lets the current step finish without stopping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/strategy/step_boundary.h"
#include "core/strategy/step_listener.h"

namespace mirrorlab::core {

class StepController : public StepListener {
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

  // ---- the strategy's side (StepListener) ----
  // Host thread, before a training step. Throws StepStopped after stop(). Asks for meetings at
  // every boundary when this step is to pause there.
  StepNeeds begin_step(const StepStart& start) override;
  // With every replica parked at `point`: stops here while the viewer wants to pause there.
  // Throws StepStopped once stopped (the meeting it runs in then releases the others).
  void hold(const PausePoint& point) override;

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
};

}  // namespace mirrorlab::core
