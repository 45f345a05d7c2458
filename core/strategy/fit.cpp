#include "core/strategy/fit.h"

#include <algorithm>
#include <stdexcept>

namespace mirrorlab::core {

Metrics Metrics::from(const LossStats& stats) {
  Metrics m;
  m.examples = stats.count;
  if (stats.count > 0) {
    const double n = static_cast<double>(stats.count);
    m.loss = stats.loss_sum / n;
    m.accuracy = static_cast<double>(stats.correct) / n;
    m.top5_accuracy = static_cast<double>(stats.correct_top5) / n;
  }
  return m;
}

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kFinished:
      return "finished";
    case StopReason::kMaxSteps:
      return "max_steps";
    case StopReason::kInterrupted:
      return "interrupted";
    case StopReason::kDiverged:
      return "diverged";
    case StopReason::kFailed:
      return "failed";
  }
  return "?";
}

std::int64_t steps_per_epoch(std::size_t examples, std::size_t global_batch) {
  return static_cast<std::int64_t>((examples + global_batch - 1) / global_batch);
}

FitLoop::FitLoop(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
                 const FitOptions& options, FitCallback* callback)
    : strategy_(&strategy),
      train_(&train),
      validation_(validation),
      options_(options),
      callback_(callback) {
  if (options.epochs < 1) throw std::invalid_argument("epochs must be at least 1");
  if (options.batch_per_replica < 1) throw std::invalid_argument("batch must be at least 1");
  if (train.size() == 0) throw std::invalid_argument("the training set is empty");
  global_ = options.batch_per_replica * strategy.num_replicas_in_sync();
  steps_per_epoch_ = core::steps_per_epoch(train.size(), global_);
}

void FitLoop::begin_epoch() {
  ++epoch_;
  if (callback_) callback_->on_epoch_begin(epoch_, options_.epochs, steps_per_epoch_);
  order_ = shuffled_indices(train_->size(), options_.seed, epoch_);
  log_ = EpochLog{};
  log_.epoch = epoch_;
  log_.steps_per_epoch = steps_per_epoch_;
  running_ = LossStats{};
  step_in_epoch_ = 0;
  examples_in_epoch_ = 0;
  in_epoch_ = true;
}

std::int64_t FitLoop::epoch_steps() const {
  return step_in_epoch_ + core::steps_per_epoch(train_->size() - examples_in_epoch_, global_);
}

std::span<const std::uint32_t> FitLoop::next_batch_indices() const {
  if (done_ || !in_epoch_) return {};
  const std::size_t begin = examples_in_epoch_;
  return std::span(order_).subspan(begin, std::min(global_, train_->size() - begin));
}

LossStats FitLoop::step() {
  if (done_) throw std::logic_error("FitLoop::step() after the last step");
  if (!in_epoch_) begin_epoch();
  const GlobalBatch batch{train_, next_batch_indices(), options_.batch_per_replica};
  const auto start = vgpu::Clock::now();
  const LossStats stats = strategy_->train_step(batch);
  last_step_seconds_ = vgpu::seconds_between(start, vgpu::Clock::now());
  if (first_step_examples_ == 0) {
    first_step_seconds_ = last_step_seconds_;
    first_step_examples_ = stats.count;
  }
  log_.seconds += last_step_seconds_;
  running_ += stats;
  history_.final_train_loss = Metrics::from(stats).loss;
  ++history_.steps;
  if (history_.steps == 1) history_.first_step_loss = history_.final_train_loss;
  if (!history_.loss_growth && history_.first_step_loss > 0 &&
      history_.final_train_loss > kLossGrowthFactor * history_.first_step_loss) {
    history_.loss_growth =
        LossGrowth{history_.steps, history_.first_step_loss, history_.final_train_loss};
    if (callback_) callback_->on_loss_growth(*history_.loss_growth);
  }
  ++log_.steps;
  ++step_in_epoch_;
  examples_in_epoch_ += batch.size();
  history_.train_examples += stats.count;
  if (callback_) {
    callback_->on_train_step(stats, last_step_seconds_);
    callback_->on_batch_end(epoch_, step_in_epoch_, log_.steps_per_epoch, Metrics::from(running_),
                            log_.seconds);
  }
  const bool epoch_complete = examples_in_epoch_ == train_->size();
  const bool max_reached = options_.max_steps > 0 && history_.steps >= options_.max_steps;
  if (epoch_complete || max_reached) {
    // A stop asked for as the epoch ends skips its validation pass and ends the run here.
    const bool stopping = options_.stop_requested && options_.stop_requested();
    // A run that went on would not close this epoch now, or would validate it: a resumed run
    // starts from before the close.
    if (!epoch_complete || stopping) closed_early_ = position_now();
    end_epoch(/*validate=*/!stopping);
    if (stopping) {
      history_.stop_reason = StopReason::kInterrupted;
      done_ = true;
    }
  }
  if (max_reached && !done_) {
    history_.stopped_by_max_steps = true;
    history_.stop_reason = StopReason::kMaxSteps;
    done_ = true;
  }
  return stats;
}

void FitLoop::stop(StopReason reason) {
  if (done_) return;
  if (in_epoch_ && step_in_epoch_ > 0) {
    closed_early_ = position_now();
    end_epoch(/*validate=*/false);
  }
  in_epoch_ = false;
  history_.stop_reason = reason;
  done_ = true;
}

std::optional<LossStats> FitLoop::validation_pass() {
  // A stop may be asked between its global batches (the app's Ctrl-C). With several workers,
  // stop_requested is their exchange: every worker asks it between the same batches, and all
  // stop at the same one.
  return strategy_->evaluate(*validation_, options_.batch_per_replica, options_.stop_requested);
}

void FitLoop::end_epoch(bool validate) {
  const bool complete = examples_in_epoch_ == train_->size();
  const bool validating = validate && validation_ != nullptr && validation_->size() > 0;
  // A stop during the validation pass leaves the run where it stood before this close, as a stop
  // asked before the pass does (a run that goes on validates the epoch then).
  std::optional<FitPosition> before;
  if (validating && options_.stop_requested) before = position_now();
  in_epoch_ = false;
  history_.train_seconds += log_.seconds;
  log_.train = Metrics::from(running_);
  bool stopped = false;
  if (validating) {
    if (const std::optional<LossStats> validation = validation_pass()) {
      log_.validation = Metrics::from(*validation);
      log_.has_validation = true;
    } else {
      stopped = true;
    }
  }
  history_.epochs.push_back(log_);
  if (callback_) callback_->on_epoch_end(log_);
  if (stopped) {
    closed_early_ = std::move(before);
    history_.stop_reason = StopReason::kInterrupted;
    done_ = true;
  }
  if (complete && epoch_ == options_.epochs) done_ = true;
}

std::int64_t FitLoop::steps_in_all() const {
  std::int64_t steps = history_.steps + (in_epoch_ ? epoch_steps() - step_in_epoch_ : 0) +
                       static_cast<std::int64_t>(options_.epochs - epoch_) * steps_per_epoch_;
  if (done_) steps = history_.steps;
  return options_.max_steps > 0 ? std::min(steps, options_.max_steps) : steps;
}

FitPosition FitLoop::position() const { return closed_early_ ? *closed_early_ : position_now(); }

FitPosition FitLoop::position_now() const {
  FitPosition p;
  p.history = history_;
  p.history.stop_reason = StopReason::kFinished;
  p.history.stopped_by_max_steps = false;
  if (in_epoch_ && step_in_epoch_ > 0) {
    p.epoch = epoch_;
    p.in_epoch = true;
    p.step_in_epoch = step_in_epoch_;
    p.examples_in_epoch = examples_in_epoch_;
    p.running = running_;
    p.epoch_seconds = log_.seconds;
  } else {
    // An epoch begun by a step that failed has run nothing: the run stands before it.
    p.epoch = in_epoch_ ? epoch_ - 1 : epoch_;
  }
  return p;
}

std::string FitLoop::why_not(const FitPosition& p) const {
  const std::size_t n = train_->size();
  const auto closed = static_cast<std::int64_t>(p.history.epochs.size());
  std::string problem;
  if (p.epoch < 0 || p.epoch > options_.epochs) {
    problem = "it is in epoch " + std::to_string(p.epoch) + ", past the " +
              std::to_string(options_.epochs) + " epochs of this run";
  } else if (closed != p.epoch - (p.in_epoch ? 1 : 0)) {
    problem = "its history closes " + std::to_string(closed) + " epochs, but it is " +
              (p.in_epoch ? "inside" : "after") + " epoch " + std::to_string(p.epoch);
  } else if (p.in_epoch &&
             (p.step_in_epoch < 1 || p.examples_in_epoch < 1 || p.examples_in_epoch > n)) {
    problem = "it has used " + std::to_string(p.examples_in_epoch) + " examples in " +
              std::to_string(p.step_in_epoch) + " steps of epoch " + std::to_string(p.epoch) +
              ", which a training set of " + std::to_string(n) + " cannot give";
  } else if (p.history.steps < p.step_in_epoch) {
    problem = "it counts " + std::to_string(p.history.steps) + " steps in all but " +
              std::to_string(p.step_in_epoch) + " in its epoch";
  }
  return problem.empty() ? "" : "the run cannot go on from there: " + problem;
}

void FitLoop::restore(const FitPosition& p) {
  if (history_.steps > 0 || in_epoch_ || epoch_ > 0) {
    throw std::logic_error("FitLoop::restore() after the run has begun");
  }
  if (const std::string problem = why_not(p); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  const std::size_t n = train_->size();
  history_ = p.history;
  history_.stop_reason = StopReason::kFinished;
  history_.stopped_by_max_steps = false;
  epoch_ = p.epoch;
  if (options_.max_steps > 0 && history_.steps >= options_.max_steps) {
    history_.stopped_by_max_steps = true;  // nothing left to run: its steps are made
    history_.stop_reason = StopReason::kMaxSteps;
    done_ = true;
  }
  if (!p.in_epoch) {
    if (epoch_ == options_.epochs) done_ = true;  // every epoch is done: nothing left to run
    return;
  }
  order_ = shuffled_indices(n, options_.seed, epoch_);
  step_in_epoch_ = p.step_in_epoch;
  examples_in_epoch_ = p.examples_in_epoch;
  running_ = p.running;
  in_epoch_ = true;
  log_ = EpochLog{};
  log_.epoch = epoch_;
  log_.steps = step_in_epoch_;
  log_.steps_per_epoch = epoch_steps();
  log_.seconds = p.epoch_seconds;
  if (callback_) callback_->on_epoch_begin(epoch_, options_.epochs, log_.steps_per_epoch);
  if (examples_in_epoch_ == n) end_epoch(/*validate=*/true);  // the close a stop skipped
}

History fit(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
            const FitOptions& options, FitCallback* callback) {
  FitLoop loop(strategy, train, validation, options, callback);
  while (!loop.done()) {
    if (options.stop_requested && options.stop_requested()) {
      loop.stop(StopReason::kInterrupted);
      break;
    }
    loop.step();
  }
  return loop.history();
}

}  // namespace mirrorlab::core
