// The global batch split over the replicas as TensorFlow splits it (uneven last batches
// included), and the loss's scaling over the replicas: Keras' replica mean against the batch mean
// of one device (checked against TensorFlow: scripts/check-tensorflow).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/training_reference.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

using core::ModelKind;
using core::OptimizerKind;
using testing_reference::options_for;

TEST(SplitGlobalBatch, FullBatchGivesEveryReplicaItsShare) {
  const auto shards = core::split_global_batch(12, 3, 4);
  ASSERT_EQ(shards.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(shards[r].replica, r);
    EXPECT_EQ(shards[r].begin, 4u * r);
    EXPECT_EQ(shards[r].count, 4u);
  }
}

// What TensorFlow 2.21's experimental_distribute_dataset gave for these batches
// (scripts/check-tensorflow, docs/tensorflow-conformance.md): each replica takes
// ceil(count / replicas) in order until none are left.
struct SplitCase {
  std::size_t count;
  int replicas;
  std::size_t per_replica;
  std::vector<std::size_t> tensorflow;
};

TEST(SplitGlobalBatch, UnevenBatchesAreSplitAsTensorFlowSplitsThem) {
  const SplitCase cases[] = {
      {40, 3, 16, {14, 14, 12}},             // range(1000).batch(48): the last batch
      {10, 8, 3, {2, 2, 2, 2, 2, 0, 0, 0}},  // range(82).batch(24)'s last batch, 8 replicas
      {10, 4, 6, {3, 3, 3, 1}},              // the same on 4
      {41, 2, 32, {21, 20}},                 // range(1001).batch(64)
      {5, 4, 2, {2, 2, 1, 0}},
      {7, 4, 2, {2, 2, 2, 1}},
      {1, 2, 2, {1, 0}},
      {3, 4, 2, {1, 1, 1, 0}},
      {1, 4, 2, {1, 0, 0, 0}},  // range(9).batch(8)
      {13, 4, 4, {4, 4, 4, 1}},
      {96, 2, 128, {48, 48}},  // Fashion-MNIST's 60000 in batches of 256: the last
  };
  for (const SplitCase& c : cases) {
    const auto shards = core::split_global_batch(c.count, c.replicas, c.per_replica);
    ASSERT_EQ(shards.size(), c.tensorflow.size());
    std::size_t next = 0;
    for (std::size_t r = 0; r < shards.size(); ++r) {
      EXPECT_EQ(shards[r].count, c.tensorflow[r])
          << c.count << " examples on " << c.replicas << " replicas, replica " << r;
      EXPECT_EQ(shards[r].begin, std::min(next, c.count));  // consecutive, in order
      next += shards[r].count;
    }
    EXPECT_EQ(next, c.count);
  }
}

// The weights after one step of `strategy` (on 2 replicas) or of one device on `indices`.
std::vector<float> weights_after_one_step(const core::Dataset& data, core::StrategyOptions o,
                                          std::vector<std::uint32_t> indices, int replicas) {
  const core::GlobalBatch batch{&data, indices, 2};
  if (replicas == 0) {
    vgpu::MemoryArena arena("/plain", 512 * vgpu::kMiB);
    core::PlainTrainer trainer(arena, o);
    trainer.train_step(batch);
    return {trainer.model().params().begin(), trainer.model().params().end()};
  }
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 256);
  core::MirroredStrategy strategy(registry.logical_devices(), o);
  strategy.train_step(batch);
  return {strategy.replica(0).model().params().begin(), strategy.replica(0).model().params().end()};
}

// Keras' model.fit on an uneven batch (measured with TensorFlow 2.21: scripts/check-tensorflow)
// divides each replica's own mean loss by the replicas, so the step follows the mean of the
// replicas' mean gradients: with examples 0 and 1 on replica 0 and example 2 on replica 1,
// (g0 + g1) / 4 + g2 / 2. Batch-mean follows (g0 + g1 + g2) / 3, as one device does. One SGD
// step from rest moves the weights by -lr times the gradient, so each example's step on one
// device gives the g_i.
TEST(LossScaling, ReplicaMeanWeighsTheReplicasMeansAlikeAndBatchMeanTheExamples) {
  const core::Dataset data = core::synthetic_dataset(8);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.1f);
  const std::vector<float> start = weights_after_one_step(data, o, {}, 0);  // no examples
  std::vector<std::vector<float>> step(3);
  for (std::uint32_t i = 0; i < 3; ++i) {
    step[i] = weights_after_one_step(data, o, {i}, 0);
    for (std::size_t j = 0; j < start.size(); ++j) step[i][j] -= start[j];
  }
  float largest = 0;
  for (const auto& s : step)
    for (float v : s) largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.0f);

  // The step each scaling should take, weight by weight; global-batch divides by the batch size
  // the data was batched with: 2 per replica x 2 replicas.
  const core::LossScaling scalings[] = {core::LossScaling::kReplicaMean,
                                        core::LossScaling::kBatchMean,
                                        core::LossScaling::kGlobalBatch};
  const auto expected = [&](int which, std::size_t j) {
    const float sum = step[0][j] + step[1][j] + step[2][j];
    return which == 0   ? (step[0][j] + step[1][j]) / 4 + step[2][j] / 2
           : which == 1 ? sum / 3
                        : sum / 4;
  };
  for (int which = 0; which < 3; ++which) {
    o.loss_scaling = scalings[which];
    const std::vector<float> w = weights_after_one_step(data, o, {0, 1, 2}, 2);
    ASSERT_EQ(w.size(), start.size());
    float worst = 0;
    float from_other[3] = {0, 0, 0};
    for (std::size_t j = 0; j < w.size(); ++j) {
      const float moved = w[j] - start[j];
      worst = std::max(worst, std::abs(moved - expected(which, j)));
      for (int other = 0; other < 3; ++other) {
        from_other[other] = std::max(from_other[other], std::abs(moved - expected(other, j)));
      }
    }
    EXPECT_LE(worst, 1e-4f * largest) << core::to_string(scalings[which]);
    for (int other = 0; other < 3; ++other) {
      if (other == which) continue;
      EXPECT_GT(from_other[other], 1e-2f * largest)
          << core::to_string(scalings[which]) << " and " << core::to_string(scalings[other])
          << " agree here";
    }
  }
}

TEST(LossScaling, TheMeansAgreeBitForBitOnAFullBatch) {
  const core::Dataset data = core::synthetic_dataset(8);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kAdam, 1e-3f);
  o.loss_scaling = core::LossScaling::kReplicaMean;
  const std::vector<float> keras = weights_after_one_step(data, o, {0, 1, 2, 3}, 2);
  o.loss_scaling = core::LossScaling::kBatchMean;
  EXPECT_EQ(keras, weights_after_one_step(data, o, {0, 1, 2, 3}, 2));
  o.loss_scaling = core::LossScaling::kGlobalBatch;
  EXPECT_EQ(keras, weights_after_one_step(data, o, {0, 1, 2, 3}, 2));
}

// The custom-loop mistake: each replica's own mean, summed by the all-reduce. One SGD step from
// the same weights moves every weight N times as far as replica-mean does on a full batch.
TEST(LossScaling, ShardMeanMovesTheWeightsReplicasTimesAsFar) {
  const core::Dataset data = core::synthetic_dataset(8);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.1f);
  o.optimizer.momentum = 0;
  const std::vector<float> start = weights_after_one_step(data, o, {}, 0);
  const std::vector<float> right = weights_after_one_step(data, o, {0, 1, 2, 3}, 2);
  o.loss_scaling = core::LossScaling::kShardMean;
  const std::vector<float> wrong = weights_after_one_step(data, o, {0, 1, 2, 3}, 2);
  ASSERT_EQ(right.size(), wrong.size());
  float largest = 0, worst = 0;
  for (std::size_t j = 0; j < right.size(); ++j) {
    const float step = right[j] - start[j];
    largest = std::max(largest, std::abs(step));
    worst = std::max(worst, std::abs((wrong[j] - start[j]) - 2 * step));
  }
  ASSERT_GT(largest, 0.0f);
  EXPECT_LE(worst, 1e-4f * largest);
}

TEST(LossScaling, NamesRoundTripAndAnUnknownOneIsRefused) {
  for (const auto s : {core::LossScaling::kReplicaMean, core::LossScaling::kBatchMean,
                       core::LossScaling::kShardMean, core::LossScaling::kGlobalBatch}) {
    EXPECT_EQ(core::parse_loss_scaling(core::to_string(s)), s);
  }
  EXPECT_THROW(core::parse_loss_scaling("mean"), std::invalid_argument);
}

TEST(SplitGlobalBatch, BatchLargerThanReplicasCanHoldIsRejected) {
  EXPECT_THROW(core::split_global_batch(13, 3, 4), std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab
