#include "core/session/step_control.h"

namespace mirrorlab::core {

void StepController::pause_at_phases(bool on) {
  std::lock_guard lock(mutex_);
  pause_requested_ = on;
  if (!on) {
    target_ = Target::kEveryBoundary;
    release();
  }
}

bool StepController::pausing_at_phases() const {
  std::lock_guard lock(mutex_);
  return pause_requested_;
}

std::optional<PausePoint> StepController::paused_at() const {
  std::lock_guard lock(mutex_);
  return paused_;
}

bool StepController::advance() {
  std::lock_guard lock(mutex_);
  if (!paused_) return false;
  target_ = Target::kEveryBoundary;
  release();
  return true;
}

void StepController::finish_step() {
  std::lock_guard lock(mutex_);
  pause_requested_ = true;
  target_ = Target::kEndOfStep;
  const bool at_end = paused_ && paused_->boundary == StepBoundary::kUpdate;
  target_step_ = at_end ? paused_->step + 1 : current_step_;
  release();
}

void StepController::run_freely() { pause_at_phases(false); }

void StepController::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  release();
}

bool StepController::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

bool StepController::wait_until_paused(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return paused_.has_value() || stopped_; });
  return paused_.has_value();
}

std::uint64_t StepController::pauses() const {
  std::lock_guard lock(mutex_);
  return pauses_;
}

StepNeeds StepController::begin_step(const StepStart& start) {
  std::lock_guard lock(mutex_);
  if (stopped_) throw StepStopped();
  current_step_ = start.step;
  StepNeeds needs;
  needs.meetings = pause_requested_;
  return needs;
}

void StepController::release() {
  // Not paused from the moment the viewer lets go (the held replica wakes a little later).
  paused_.reset();
  ++release_generation_;
  cv_.notify_all();
}

bool StepController::should_hold(const PausePoint& point) const {
  if (!pause_requested_) return false;
  if (target_ == Target::kEveryBoundary) return true;
  return point.boundary == StepBoundary::kUpdate && point.step >= target_step_;
}

void StepController::hold(const PausePoint& point) {
  std::unique_lock lock(mutex_);
  if (stopped_) throw StepStopped();
  if (!should_hold(point)) return;
  target_ = Target::kEveryBoundary;
  paused_ = point;
  ++pauses_;
  const std::uint64_t generation = release_generation_;
  cv_.notify_all();  // wait_until_paused
  cv_.wait(lock, [&] { return release_generation_ != generation || stopped_; });
  if (stopped_) throw StepStopped();
}

}  // namespace mirrorlab::core
