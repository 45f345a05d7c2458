// TrainingSession watching a run that another thread drives (training_session.h): Python's
// model.fit and custom loop, seen by mirrorlab.gui.watch.
#include <atomic>
#include <utility>

#include "core/session/training_session.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

// The fit's callback: its steps and epochs, as the session's own thread records them.
class TrainingSession::WatchedFit : public FitCallback {
 public:
  explicit WatchedFit(TrainingSession& session) : s_(&session) {}

  void on_epoch_begin(int epoch, int epochs, std::int64_t steps_per_epoch) override {
    std::lock_guard lock(s_->mutex_);
    s_->epoch_ = epoch;
    s_->epochs_ = epochs;
    s_->step_in_epoch_ = 0;
    s_->steps_per_epoch_ = steps_per_epoch;
  }
  void on_train_step(const LossStats& step, double seconds) override {
    const Metrics m = Metrics::from(step);
    pending_.loss = m.loss;
    pending_.accuracy = m.accuracy;
    pending_.examples = step.count;
    pending_.seconds = seconds;
  }
  void on_batch_end(int epoch, std::int64_t step_in_epoch, std::int64_t, const Metrics&,
                    double) override {
    std::lock_guard lock(s_->mutex_);
    s_->step_in_epoch_ = step_in_epoch;
    pending_.step = static_cast<std::int64_t>(s_->steps_.size()) + 1;
    pending_.epoch = epoch;
    s_->steps_.push_back(pending_);
  }
  void on_epoch_end(const EpochLog& log) override {
    std::lock_guard lock(s_->mutex_);
    s_->epoch_logs_.push_back(log);
  }
  void on_loss_growth(const LossGrowth& growth) override {
    std::lock_guard lock(s_->mutex_);
    s_->loss_growth_ = growth;
  }

 private:
  TrainingSession* s_;
  StepRecord pending_;  // the driving thread's: the step between on_train_step and on_batch_end
};

// The events and the step record of the watched run's steps, while recording is on: decided as
// each step starts, for the whole step (a recorder told of half a step would read replicas it
// was never given).
class TrainingSession::Recording : public StepListener {
 public:
  explicit Recording(TrainingSession& session) : s_(&session) {}

  void set(bool on) { on_ = on; }

  StepNeeds begin_step(const StepStart& start) override {
    // Whoever drives it (a fit, or a custom loop's strategy.run), the step and its batch.
    step_ = start.step;
    {
      std::lock_guard lock(s_->mutex_);
      if (start.batch != nullptr && start.batch->batch_per_replica > 0) {
        s_->global_batch_ = start.batch->batch_per_replica *
                            static_cast<std::size_t>(s_->strategy_->num_replicas_in_sync());
      }
      // Outside a fit (which says itself that it runs), a custom loop's step: the run trains
      // while it lasts, and no epoch of a fit goes on.
      outside_fit_ = s_->state_ != SessionState::kRunning;
      if (outside_fit_) {
        s_->state_ = SessionState::kRunning;
        s_->epochs_ = 0;
        s_->steps_per_epoch_ = 0;
      }
    }
    in_step_ = on_.load();
    if (!in_step_) return {};
    StepNeeds needs = s_->events_.begin_step(start);
    needs |= s_->recorder_.begin_step(start);
    return needs;
  }
  void on_phase(const RunEvent& event) override {
    // Evaluation's phases come outside training steps: kept while recording is on.
    if (in_step_ || on_) s_->events_.on_phase(event);
  }
  void on_replica_reached(Replica& replica, StepBoundary boundary) override {
    if (!in_step_) return;
    s_->events_.on_replica_reached(replica, boundary);
    s_->recorder_.on_replica_reached(replica, boundary);
  }
  void on_all_reached(const PausePoint& point) override {
    if (!in_step_) return;
    s_->events_.on_all_reached(point);
    s_->recorder_.on_all_reached(point);
  }
  void on_collective_step(const vgpu::CollectiveStep& step) override {
    if (!in_step_) return;
    s_->events_.on_collective_step(step);
    s_->recorder_.on_collective_step(step);
  }
  void end_step(bool completed) override {
    {
      std::lock_guard lock(s_->mutex_);
      if (completed) s_->steps_done_ = step_ + 1;  // the one place: a fit's steps or a loop's
      if (outside_fit_ && s_->state_ == SessionState::kRunning) s_->state_ = SessionState::kPaused;
    }
    if (!in_step_) return;
    in_step_ = false;
    s_->events_.end_step(completed);
    s_->recorder_.end_step(completed);
  }
  void abort_step() override {
    if (!in_step_) return;
    s_->events_.abort_step();
    s_->recorder_.abort_step();
  }

 private:
  TrainingSession* s_;
  std::atomic<bool> on_ = true;
  bool in_step_ = false;      // the host thread's, between begin_step and end_step
  std::int64_t step_ = 0;     // the strategy's, 0-based
  bool outside_fit_ = false;  // the step is a custom loop's: it set the run running
};

TrainingSession::TrainingSession(MirroredStrategy& strategy, SessionConfig config,
                                 std::string driven_by)
    : config_(std::move(config)),
      devices_(strategy.devices()),
      strategy_(&strategy),
      driven_by_(std::move(driven_by)),
      watched_fit_(std::make_unique<WatchedFit>(*this)),
      recording_(std::make_unique<Recording>(*this)) {
  if (driven_by_.empty()) driven_by_ = "another thread";
  data_ = std::make_shared<const FashionMnist>();  // the driver's data are its own
  steps_done_ = strategy.steps_done();
  global_batch_ = config_.settings.batch_per_replica *
                  static_cast<std::size_t>(strategy.num_replicas_in_sync());
  strategy.add_listener(recording_.get());
}

void TrainingSession::set_recording(bool on) {
  if (recording_) static_cast<Recording&>(*recording_).set(on);
}

void TrainingSession::watched_fit_began(int epochs, std::size_t global_batch) {
  std::lock_guard lock(mutex_);
  epochs_ = epochs;
  global_batch_ = global_batch;
  epoch_ = 0;
  step_in_epoch_ = 0;
  error_.clear();
  failure_ = nullptr;
  state_ = SessionState::kRunning;
}

void TrainingSession::watched_fit_ended(const std::string& error) {
  std::lock_guard lock(mutex_);
  if (stop_) return;
  state_ = error.empty() ? SessionState::kPaused : SessionState::kFailed;
  error_ = error;
}

void TrainingSession::watched_learning_rate_set(float learning_rate) {
  std::lock_guard lock(mutex_);
  learning_rate_ = learning_rate;
}

FitCallback& TrainingSession::watched_fit() { return *watched_fit_; }

}  // namespace mirrorlab::core
