// model.fit() for a MirroredStrategy: epochs of shuffled global batches, a validation pass
// after each epoch, and a callback for progress (the app's Keras-style bar, the GUI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dataset.h"
#include "core/mirrored_strategy.h"

namespace mirrorlab::core {

struct FitOptions {
  int epochs = 5;
  std::int64_t max_steps = 0;  // stop after this many global steps in all (0: no limit)
  std::size_t batch_per_replica = 64;
  std::uint64_t seed = 1;      // shuffling; epoch e uses shuffled_indices(n, seed, e)
};

// Mean loss and accuracies over the examples seen so far in an epoch (or over a validation
// pass), Keras' running averages.
struct Metrics {
  double loss = 0, accuracy = 0, top5_accuracy = 0;
  std::int64_t examples = 0;
  static Metrics from(const LossStats& stats);
};

struct EpochLog {
  int epoch = 0;                   // 1-based
  std::int64_t steps = 0;          // global steps run in this epoch
  std::int64_t steps_per_epoch = 0;
  Metrics train, validation;
  bool has_validation = false;
  double seconds = 0;              // training steps only, not the validation pass
};

struct History {
  std::vector<EpochLog> epochs;
  double final_train_loss = 0;     // mean loss of the global batch of the last step
  std::int64_t steps = 0;
  double train_seconds = 0;
  std::int64_t train_examples = 0;
  bool stopped_by_max_steps = false;
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
};

std::int64_t steps_per_epoch(std::size_t examples, std::size_t global_batch);

History fit(MirroredStrategy& strategy, const Dataset& train, const Dataset* validation,
            const FitOptions& options, FitCallback* callback = nullptr);

}  // namespace mirrorlab::core
