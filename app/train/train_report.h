// What `mirrorlab train` says about its run, in the order it says it: the strategy (TensorFlow's
// log lines, the model's summary), the batches, the progress with its warnings, the advice when a
// run fails, the results at the end, and the files written after them (--history, --trace).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app/output/keras_progress.h"
#include "app/train/train_run.h"
#include "core/strategy/divergence.h"
#include "core/strategy/fit.h"

namespace mirrorlab::app {

// What starts each line TensorFlow would log that mirrorlab writes (on stderr, as TensorFlow
// writes them): the line itself follows, as TensorFlow 2.21 logs it ("INFO:tensorflow:...").
inline constexpr const char* kAsTensorflowLogs = "(as TensorFlow logs it) ";

// Before the data is loaded: how the strategy trains (TensorFlow's log lines alone, mirrorlab's
// own words with several workers), the model's summary and the all-reduce's notes.
void print_strategy(const TrainRun& run);
// Once it is: the global batch and the optimizer, how each epoch's short last batch is split
// and weighed, and the shard-mean scaling's mistake when it is asked for.
void print_batches(const TrainRun& run, std::size_t train_examples);

// Keras' progress, with a warning (kept for the history) when the loss grows past reason.
class TrainProgress : public KerasProgress {
 public:
  explicit TrainProgress(TrainRun& run);
  void on_loss_growth(const core::LossGrowth& g) override;

 private:
  TrainRun* run_;
};

// After a divergence found at `where`: what the user can change ("try a lower --lr (now 10)"),
// or, for the NaN that --nan-at put there, what the check did.
std::string divergence_advice(const TrainOptions& o, const core::NonFiniteValue& where);
// After a device failed: where the run can go on from.
std::string resume_advice(const TrainCheckpoints& checkpoints);

// At the end: why it stopped early, the test metrics, images/s, each device's time per phase
// (`totals`, over `steps_made` steps of this run) and its peak memory.
void print_results(const TrainRun& run, const core::FitLoop& loop,
                   const std::vector<core::PhaseTotals>& totals, std::int64_t steps_made);
// --history and --trace, on worker 0, with every worker's part (an exchange: with the same
// flags, every worker comes here, or none). A file not written is added to run.write_errors.
void write_run_files(TrainRun& run, const core::FitLoop& loop, const RunEnd& end,
                     const std::vector<core::PhaseTotals>& totals, std::size_t train_examples);

}  // namespace mirrorlab::app
