#include "core/step_control.h"

namespace mirrorlab::core {

const char* to_string(StepBoundary boundary) {
  switch (boundary) {
    case StepBoundary::kSplit:
      return "split";
    case StepBoundary::kForward:
      return "forward";
    case StepBoundary::kBackward:
      return "backward";
    case StepBoundary::kAllReduceStep:
      return "all-reduce step";
    case StepBoundary::kUpdate:
      return "update";
  }
  return "?";
}

std::string PausePoint::label() const {
  std::string text = "step " + std::to_string(step) + ": ";
  if (boundary != StepBoundary::kAllReduceStep) return text + "after " + to_string(boundary);
  text += "all-reduce step " + std::to_string(all_reduce_step + 1) + " of " +
          std::to_string(all_reduce_steps);
  if (!all_reduce_phase.empty()) text += " (" + all_reduce_phase + ")";
  return text;
}

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

bool StepController::begin_step(int num_replicas, std::int64_t step) {
  std::lock_guard lock(mutex_);
  if (stopped_) throw StepStopped();
  current_step_ = step;
  // A fresh barrier each step: one aborted by a failed replica stays aborted.
  barrier_ = pause_requested_ ? std::make_shared<vgpu::CancellableBarrier>(num_replicas) : nullptr;
  return pause_requested_;
}

void StepController::meet(const std::function<void()>& all_arrived) {
  std::shared_ptr<vgpu::CancellableBarrier> barrier;
  {
    std::lock_guard lock(mutex_);
    barrier = barrier_;
  }
  barrier->arrive_and_wait(all_arrived);
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

void StepController::abort_step() {
  std::shared_ptr<vgpu::CancellableBarrier> barrier;
  {
    std::lock_guard lock(mutex_);
    barrier = barrier_;
  }
  if (barrier) barrier->abort();
}

}  // namespace mirrorlab::core
