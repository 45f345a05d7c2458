// One training step driven a phase at a time by a caller on another thread: the custom loop of
// the Python module, where the split, forward, backward, each step of the all-reduce and the
// update are calls a student makes, and every replica's values come back between them.
//
// The step is the strategy's own (forward and backward, then apply_gradients: the all-reduce and
// the update), run by strategy.run() on a thread of its own, with a StepController holding every
// replica at each boundary (core/session/step_control.h). Between calls the replicas are parked
// there, so the caller may read each replica's shard, logits, gradients and weights, and change a
// replica's gradients (they are then what the rest of the step uses: summed by the all-reduce, or
// applied by the update).
//
// Threads: every method is for one caller thread. The strategy is the step's while it runs: it
// must not be used elsewhere until the step has ended (finish(), or the destructor).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/nn/loss.h"
#include "core/session/step_control.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

// The loss of each example of a shard, as the core's backward computes it (its CPU reference,
// in double): -log softmax(logits)[label]. `logits`: rows of `classes` values.
std::vector<double> per_example_loss(std::span<const float> logits,
                                     std::span<const std::uint8_t> labels, int classes);

class StepByStep {
 public:
  // Starts the strategy's next training step on `batch` (its data must outlive this) and waits
  // until every replica is held after the split. Throws what the step threw if it ended before.
  StepByStep(MirroredStrategy& strategy, const GlobalBatch& batch);
  // A step not finished is let run to its end (never left half-done); what it threw is dropped.
  ~StepByStep();
  StepByStep(const StepByStep&) = delete;
  StepByStep& operator=(const StepByStep&) = delete;

  // Where every replica is held; nullopt once the step has ended.
  const std::optional<PausePoint>& held_at() const { return held_; }
  bool ended() const { return !held_.has_value(); }
  // Releases the replicas to the next boundary and waits until they are held there, or until
  // the step ends: then throws what it threw (DivergedError, ReplicasOutOfSync, ...), if it did.
  void advance();
  // advance() until held at `boundary` (or the step's end).
  void advance_to(StepBoundary boundary);
  // Runs the step to its end; what each replica's part returned (its shard's loss sums), or what
  // the step threw.
  const std::vector<LossStats>& finish();

  // ---- each replica's values, while the replicas are held (std::logic_error otherwise) ----
  int replicas() const;
  std::vector<float> images(int replica);  // its shard: [count, 28, 28, 1] in [0, 1]
  std::vector<std::uint8_t> labels(int replica);
  std::vector<float> logits(int replica);     // after forward: [count, classes]
  std::vector<float> gradients(int replica);  // the flat buffer (Model::weight_tensors())
  std::vector<float> weights(int replica);    // the flat buffer of parameters
  std::uint64_t fingerprint(int replica);
  // Overwrites the replica's gradients (as many values as gradients() gives): what the rest of
  // the step sums or applies. std::invalid_argument for another count.
  void set_gradients(int replica, std::span<const float> values);

 private:
  Replica& held_replica(int replica);
  void wait();  // until held or ended; rethrows the step's failure

  MirroredStrategy* strategy_;
  StepController controller_;
  std::thread thread_;
  std::optional<PausePoint> held_;
  std::vector<LossStats> results_;
  std::exception_ptr failure_;     // written by the step's thread before done_
  std::atomic<bool> done_{false};  // the step's thread has ended
  std::vector<float> scratch_;
};

}  // namespace mirrorlab::core
