// model.fit() for a MirroredStrategy: epochs of shuffled global batches, a validation pass
// after each epoch, and a callback for progress (the app's Keras-style bar, the GUI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/io/dataset.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

struct FitOptions {
  int epochs = 5;
  std::int64_t max_steps = 0;  // stop after this many global steps in all (0: no limit)
  std::size_t batch_per_replica = 64;
  std::uint64_t seed = 1;  // shuffling; epoch e uses shuffled_indices(n, seed, e)
  // Asked between steps (fit()), before a validation pass and between its global batches: true
  // stops the run there, as interrupted (the app's Ctrl-C), the epoch not yet closed (a run that
  // goes on from its position validates it). Empty: never.
  std::function<bool()> stop_requested;
};

// Why a run ended.
enum class StopReason {
  kFinished,     // every epoch
  kMaxSteps,     // FitOptions::max_steps
  kInterrupted,  // stop_requested, or FitLoop::stop()
  kDiverged,     // a step threw DivergedError
  kFailed,       // a step threw something else
};
const char* to_string(StopReason reason);  // "finished", "max_steps", "interrupted", ...

// The mean loss of a step has grown far past where it started: training is diverging, though
// every value is still finite (a learning rate too high for the batch).
struct LossGrowth {
  std::int64_t step = 0;  // 1-based global step where it was seen
  double first_loss = 0;  // of step 1
  double loss = 0;        // of `step`
};
inline constexpr double kLossGrowthFactor = 100;

// Mean loss and accuracies over the examples seen so far in an epoch (or over a validation
// pass), Keras' running averages.
struct Metrics {
  double loss = 0, accuracy = 0, top5_accuracy = 0;
  std::int64_t examples = 0;
  static Metrics from(const LossStats& stats);
};

struct EpochLog {
  int epoch = 0;           // 1-based
  std::int64_t steps = 0;  // global steps run in this epoch
  std::int64_t steps_per_epoch = 0;
  Metrics train, validation;
  bool has_validation = false;
  double seconds = 0;  // training steps only, not the validation pass
};

struct History {
  std::vector<EpochLog> epochs;
  double final_train_loss = 0;  // mean loss of the global batch of the last step
  std::int64_t steps = 0;
  double train_seconds = 0;
  std::int64_t train_examples = 0;
  bool stopped_by_max_steps = false;
  StopReason stop_reason = StopReason::kFinished;  // once done
  double first_step_loss = 0;
  std::optional<LossGrowth> loss_growth;  // the first time the loss passed kLossGrowthFactor x
};

class FitCallback {
 public:
  virtual ~FitCallback() = default;
  virtual void on_epoch_begin(int epoch, int epochs, std::int64_t steps_per_epoch) {
    (void)epoch, (void)epochs, (void)steps_per_epoch;
  }
  // After each global step: `running` averages the epoch so far.
  virtual void on_batch_end(int epoch, std::int64_t step_in_epoch, std::int64_t steps_per_epoch,
                            const Metrics& running, double epoch_seconds) {
    (void)epoch, (void)step_in_epoch, (void)steps_per_epoch, (void)running, (void)epoch_seconds;
  }
  virtual void on_epoch_end(const EpochLog& log) { (void)log; }
  // After each global step, before on_batch_end: that step's own sums and its time.
  virtual void on_train_step(const LossStats& step, double seconds) { (void)step, (void)seconds; }
  // Once a run, when a step's mean loss first exceeds kLossGrowthFactor x that of step 1.
  virtual void on_loss_growth(const LossGrowth& growth) { (void)growth; }
};

std::int64_t steps_per_epoch(std::size_t examples, std::size_t global_batch);

// Where a run stands between two steps: all a FitLoop needs to go on bit for bit as if it had
// never stopped (what a checkpoint keeps besides the weights and the optimizer). The epoch's
// order of examples is not kept: it is shuffled_indices(examples, seed, epoch) again.
struct FitPosition {
  History history;        // the epochs closed so far and the run's counters (stop_reason kFinished)
  int epoch = 0;          // the open epoch (1-based), else the last closed one; 0 before any step
  bool in_epoch = false;  // an epoch has run steps and is not closed
  std::int64_t step_in_epoch = 0;     // its steps so far
  std::size_t examples_in_epoch = 0;  // the examples of its shuffled order used so far
  LossStats running;                  // its sums so far (Keras' running averages)
  double epoch_seconds = 0;           // its training time so far
};

// fit() one global step at a time: fit() runs it to the end in a loop, a TrainingSession (the
// GUI) one step per command, pausing in between. An epoch begins at its first step() and ends
// (validation pass, on_epoch_end) within its last one. Epoch seconds count the steps only, so
// time spent paused between steps is not training time.
class FitLoop {
 public:
  // Throws std::invalid_argument for epochs < 1, batch < 1 or an empty training set.
  FitLoop(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
          const FitOptions& options, FitCallback* callback = nullptr);

  bool done() const { return done_; }
  // Runs the next global step; returns its summed stats. Precondition: !done(). When the step
  // throws (DivergedError, out of memory), nothing of it is counted: call stop() to close.
  LossStats step();
  // Where the run stands, to go on from later: between steps, also after the run ended. An epoch
  // that a stop or the step limit closed early is given as it was before closing (a run that
  // goes on continues it), and an epoch a stop kept from its validation pass as not yet closed.
  FitPosition position() const;
  // Goes on from `position` (of a run over the same examples and seed): before the first step
  // only. The batch per replica and the number of replicas may differ from the run that left it:
  // the epoch goes on from the next unused example of its order. An epoch whose examples were
  // all used but which was not closed is closed now, with its validation pass. Throws
  // std::invalid_argument, changing nothing, when the position does not fit this run (an epoch
  // past its epochs, more examples than the training set holds).
  void restore(const FitPosition& position);
  // "" when restore(position) would take it, else why not (a sentence).
  std::string why_not(const FitPosition& position) const;
  const FitOptions& options() const { return options_; }
  const Dataset& train() const { return *train_; }
  // Ends the run before its end, for `reason`: an epoch in progress closes with the steps it ran
  // (on_epoch_end, no validation pass) and done() becomes true. Nothing if already done.
  void stop(StopReason reason);
  const History& history() const { return history_; }
  int epoch() const { return epoch_; }                           // 1-based, the current or last
  std::int64_t step_in_epoch() const { return step_in_epoch_; }  // steps done in it
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::size_t global_batch() const { return global_; }
  // The global steps the run will have made when it ends, unless it is stopped early: the step
  // limit, or the steps its epochs take.
  std::int64_t steps_in_all() const;
  double last_step_seconds() const { return last_step_seconds_; }  // train_step of the last step
  // This loop's first step (not a resumed run's): what is made once (kernels loaded, buffers
  // sized, a graph captured) is paid there, so a short run's rate is mostly its first step's.
  double first_step_seconds() const { return first_step_seconds_; }
  std::int64_t first_step_examples() const { return first_step_examples_; }
  // The examples of the next step's global batch (empty when done).
  std::span<const std::uint32_t> next_batch_indices() const;

 private:
  void begin_epoch();
  void end_epoch(bool validate);
  // The validation set's summed stats; nullopt when a stop was asked between its batches.
  std::optional<LossStats> validation_pass();
  FitPosition position_now() const;
  // The steps of the open epoch: its steps so far and those its unused examples still need.
  std::int64_t epoch_steps() const;

  MirroredStrategy* strategy_;
  const Dataset* train_;
  const Dataset* validation_;
  FitOptions options_;
  FitCallback* callback_;
  std::size_t global_ = 0;
  std::int64_t steps_per_epoch_ = 0;
  History history_;
  bool done_ = false;
  bool in_epoch_ = false;
  int epoch_ = 0;
  std::int64_t step_in_epoch_ = 0;
  std::size_t examples_in_epoch_ = 0;
  std::optional<FitPosition> closed_early_;  // the position before an early close
  std::vector<std::uint32_t> order_;
  LossStats running_;
  EpochLog log_;
  double last_step_seconds_ = 0;
  double first_step_seconds_ = 0;
  std::int64_t first_step_examples_ = 0;
};

History fit(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
            const FitOptions& options, FitCallback* callback = nullptr);

}  // namespace mirrorlab::core
