// StepRecorder: what it keeps of a training step must be what happened: the batch and its
// shards, per-replica gradients that differ before the all-reduce and agree after it, equal
// fingerprints, the all-reduce's steps, and the moments of the step in order.
#include <gtest/gtest.h>

#include <cmath>

#include "core/nn/fingerprint.h"
#include "core/session/step_figures.h"
#include "core/session/step_recorder.h"
#include "tests/support/step_rig.h"

namespace mirrorlab {
namespace {

using core::StepBoundary;
using testing_rig::Rig;
using testing_rig::step_through;
using Case = testing_rig::AlgorithmCase;

class RecorderOnAStep : public ::testing::TestWithParam<Case> {};

TEST_P(RecorderOnAStep, KeepsTheBatchGradientsFingerprintsAndAllReduceOfTheStep) {
  const Case c = GetParam();
  Rig rig(c.replicas, c.all_reduce);
  core::StepRecorder recorder;
  rig.strategy->add_listener(&recorder);
  EXPECT_EQ(recorder.snapshot().step, -1);
  recorder.choose_layer(2);  // the MLP's last Dense: 1290 values, all kept
  // 4 per replica, the batch short by 2: an uneven global batch, which TensorFlow splits
  // 3 + 3 on 2 replicas and 4 + 4 + 2 on 3 (each takes ceil(count / replicas)).
  const std::size_t count = 4 * static_cast<std::size_t>(c.replicas) - 2;
  rig.strategy->train_step(rig.batch(8, count));
  rig.strategy->train_step(rig.batch(0, count));  // the record is of the last step
  const core::RecordedStep r = recorder.snapshot();

  EXPECT_EQ(r.step, 1);
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(r.indices.size(), count);
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_EQ(r.indices[i], rig.order[i]);
    EXPECT_EQ(r.labels[i], rig.data.labels[rig.order[i]]);
  }
  EXPECT_EQ(r.batch_per_replica, 4u);
  ASSERT_EQ(r.replicas.size(), static_cast<std::size_t>(c.replicas));
  for (int i = 0; i < c.replicas; ++i) {
    const core::ReplicaRecord& rec = r.replicas[static_cast<std::size_t>(i)];
    EXPECT_EQ(rec.device, "/gpu:" + std::to_string(i));
    const std::size_t each = c.replicas == 2 ? 3u : 4u;
    EXPECT_EQ(rec.shard_begin, each * static_cast<std::size_t>(i));
    EXPECT_EQ(rec.shard_count, i + 1 < c.replicas ? each : count - each * (c.replicas - 1));
  }

  // Layers with parameters: Dense 784x256, Dense 256x128, Dense 128x10.
  ASSERT_EQ(r.layers.size(), 3u);
  EXPECT_EQ(r.chosen_layer, 2);
  EXPECT_EQ(r.chosen_layer_values, 128u * 10u + 10u);
  for (const auto& rec : r.replicas) {
    ASSERT_EQ(rec.gradient_norms.size(), 3u);
    ASSERT_EQ(rec.gradient_before.size(), r.chosen_layer_values);
    ASSERT_EQ(rec.gradient_after.size(), r.chosen_layer_values);
    // The whole layer is kept, so its norm is the norm of the kept values.
    double sum = 0;
    for (float v : rec.gradient_before) sum += double{v} * v;
    EXPECT_NEAR(rec.gradient_norms[2], std::sqrt(sum), 1e-6 * std::sqrt(sum));
    EXPECT_GT(rec.gradient_norms[0], 0.0);
  }
  // Before: each replica's own gradient, different. After: the sum, identical everywhere.
  const auto& first = r.replicas[0];
  for (std::size_t i = 1; i < r.replicas.size(); ++i) {
    EXPECT_NE(r.replicas[i].gradient_before, first.gradient_before) << "replica " << i;
    EXPECT_EQ(r.replicas[i].gradient_after, first.gradient_after) << "replica " << i;
    EXPECT_EQ(r.replicas[i].fingerprint, first.fingerprint) << "replica " << i;
  }
  for (std::size_t v = 0; v < first.gradient_after.size(); ++v) {
    double sum = 0;
    for (const auto& rec : r.replicas) sum += rec.gradient_before[v];
    ASSERT_NEAR(first.gradient_after[v], sum, 1e-6 * (1 + std::abs(sum))) << "value " << v;
  }
  EXPECT_TRUE(first.has_fingerprint);
  EXPECT_EQ(first.fingerprint, core::fingerprint(rig.strategy->replica(0).model().params()));

  // The all-reduce: every step, as the algorithm promises.
  const int k = rig.strategy->all_reduce().num_steps(c.replicas);
  EXPECT_EQ(r.all_reduce, c.all_reduce);
  EXPECT_EQ(r.all_reduce_steps, k);
  ASSERT_EQ(r.collective_steps.size(), static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    const auto& step = r.collective_steps[static_cast<std::size_t>(i)];
    EXPECT_EQ(step.index, i);
    EXPECT_FALSE(step.transfers.empty());
    EXPECT_LE(step.start, step.finish);
  }

  // The moments every replica passed, in order, in free running too.
  ASSERT_EQ(r.points.size(), static_cast<std::size_t>(4 + k));
  EXPECT_EQ(r.points[0].boundary, StepBoundary::kSplit);
  EXPECT_EQ(r.points[1].boundary, StepBoundary::kForward);
  EXPECT_EQ(r.points[2].boundary, StepBoundary::kBackward);
  for (int i = 0; i < k; ++i) {
    EXPECT_EQ(r.points[static_cast<std::size_t>(3 + i)].all_reduce_step, i);
  }
  EXPECT_EQ(r.points.back().boundary, StepBoundary::kUpdate);
  for (std::size_t i = 1; i < r.points.size(); ++i)
    EXPECT_LE(r.points[i - 1].time, r.points[i].time);
  const core::MomentProgress done = core::final_progress(r);
  EXPECT_TRUE(done.updated && done.all_reduced);
  EXPECT_EQ(done.collective_steps, k);
}

INSTANTIATE_TEST_SUITE_P(RingAndReduceToOne, RecorderOnAStep, testing_rig::kAlgorithmCases,
                         testing_rig::case_name);

TEST(StepRecorder, APausedStepIsPublishedMomentByMoment) {
  Rig rig(2, "ring");
  core::StepController controller;
  core::StepRecorder recorder;
  rig.strategy->add_listener(&controller);
  rig.strategy->add_listener(&recorder);
  controller.pause_at_phases(true);
  std::uint64_t version = recorder.version();
  std::vector<core::RecordedStep> records;
  step_through(rig, controller, rig.batch(0, 8), [&](const core::PausePoint& p) {
    core::RecordedStep r;
    EXPECT_TRUE(recorder.snapshot_if_newer(version, r)) << p.label();
    EXPECT_FALSE(recorder.snapshot_if_newer(version, r)) << "nothing new while held";
    EXPECT_FALSE(r.complete);
    ASSERT_FALSE(r.points.empty());
    EXPECT_EQ(r.points.back().label(), p.label());
    records.push_back(r);
    controller.advance();
  });
  ASSERT_EQ(records.size(), 6u);  // split, forward, backward, 2 ring steps, update
  // After forward: no gradients yet. After backward: before, not after. After the last
  // all-reduce step: after. After update: fingerprints.
  EXPECT_TRUE(records[1].replicas[0].gradient_before.empty());
  EXPECT_FALSE(records[2].replicas[0].gradient_before.empty());
  EXPECT_TRUE(records[2].replicas[0].gradient_after.empty());
  EXPECT_TRUE(records[2].collective_steps.empty());
  EXPECT_EQ(records[3].collective_steps.size(), 1u);
  EXPECT_TRUE(records[3].replicas[1].gradient_after.empty());
  EXPECT_FALSE(records[4].replicas[1].gradient_after.empty());
  EXPECT_FALSE(records[4].replicas[1].has_fingerprint);
  EXPECT_TRUE(records[5].replicas[1].has_fingerprint);
  // The last record can redraw every earlier moment.
  const core::RecordedStep& last = records.back();
  EXPECT_FALSE(core::moment_progress(last, 1).backward);
  EXPECT_TRUE(core::moment_progress(last, 2).backward);
  EXPECT_FALSE(core::moment_progress(last, 2).all_reduced);
  EXPECT_EQ(core::moment_progress(last, 3).collective_steps, 1);
  EXPECT_TRUE(core::moment_progress(last, 4).all_reduced);
  EXPECT_FALSE(core::moment_progress(last, 4).updated);
  EXPECT_TRUE(core::moment_progress(last, 5).updated);
  // And after the step, the complete record.
  EXPECT_TRUE(recorder.snapshot().complete);
}

TEST(StepRecorder, TheChosenLayerIsClampedAndKeepsAtMostTheLimit) {
  Rig rig(2, "reduce-to-one");
  core::StepRecorder recorder;
  rig.strategy->add_listener(&recorder);
  recorder.choose_layer(99);
  rig.strategy->train_step(rig.batch(0, 8));
  EXPECT_EQ(recorder.snapshot().chosen_layer, 2);
  recorder.choose_layer(0);  // 784x256 + 256 values: only the middle ones are kept
  rig.strategy->train_step(rig.batch(8, 8));
  const core::RecordedStep r = recorder.snapshot();
  EXPECT_EQ(r.chosen_layer, 0);
  EXPECT_EQ(r.chosen_layer_values, 784u * 256u + 256u);
  EXPECT_EQ(r.replicas[0].gradient_before.size(), core::kMaxRecordedGradientValues);
  EXPECT_EQ(r.chosen_layer_from, (784u * 256u + 256u - core::kMaxRecordedGradientValues) / 2);
  const auto grads = rig.strategy->replica(1).model().grads();  // after the step: the sum
  EXPECT_TRUE(std::equal(r.replicas[1].gradient_after.begin(), r.replicas[1].gradient_after.end(),
                         grads.begin() + static_cast<std::ptrdiff_t>(r.chosen_layer_from)));
  // The middle of a first dense layer: pixels of the garment, whose gradients are not all 0.
  EXPECT_TRUE(std::any_of(r.replicas[0].gradient_before.begin(),
                          r.replicas[0].gradient_before.end(), [](float g) { return g != 0; }));
}

TEST(StepRecorder, OneReplicaHasNoAllReduceAndItsOwnGradientAfter) {
  Rig rig(1, "ring");
  core::StepRecorder recorder;
  rig.strategy->add_listener(&recorder);
  rig.strategy->train_step(rig.batch(0, 4));
  const core::RecordedStep r = recorder.snapshot();
  EXPECT_EQ(r.all_reduce_steps, 0);
  EXPECT_TRUE(r.collective_steps.empty());
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.replicas[0].gradient_after, r.replicas[0].gradient_before);
  EXPECT_TRUE(core::final_progress(r).all_reduced);
  EXPECT_EQ(r.replicas[0].fingerprint,
            core::fingerprint(rig.strategy->replica(0).model().params()));
}

TEST(StepRecorder, EvaluationIsNotRecorded) {
  Rig rig(2, "ring");
  core::StepRecorder recorder;
  rig.strategy->add_listener(&recorder);
  rig.strategy->train_step(rig.batch(0, 8));
  const std::uint64_t version = recorder.version();
  rig.strategy->evaluate(rig.data, 4);
  EXPECT_EQ(recorder.version(), version);
  EXPECT_EQ(recorder.snapshot().step, 0);
}

// The gradients' spread, as the lessons check it and the Gradients panel says it: per value the
// gap between the largest and the smallest replica, at most (not the gap to replica 0 alone,
// which had made the panel say 0.0102 where lesson 5's check said 0.0112).
TEST(StepFigures, TheGradientSpreadIsTheWidestGapBetweenAnyTwoReplicas) {
  core::RecordedStep record;
  EXPECT_FALSE(core::gradient_spread(record, true).has_value()) << "no replica";
  record.replicas.resize(3);
  record.replicas[0].gradient_before = {0.0f, 0.25f};
  record.replicas[1].gradient_before = {1.0f, 0.25f};
  record.replicas[2].gradient_before = {-1.0f, 0.5f};
  EXPECT_EQ(core::gradient_spread(record, true), 2.0);
  EXPECT_FALSE(core::gradient_spread(record, false).has_value()) << "nothing after yet";
  for (core::ReplicaRecord& r : record.replicas) r.gradient_after = {0.5f, 0.5f};
  EXPECT_EQ(core::gradient_spread(record, false), 0.0);
  record.replicas[2].gradient_before.pop_back();
  EXPECT_FALSE(core::gradient_spread(record, true).has_value()) << "a replica short of values";
}

// Whether the replicas' weights are the same, as the Devices and Gradients panels and the
// lessons' replicas_in_sync say it: unknown until every replica has a fingerprint.
TEST(StepFigures, WeightsAreInSyncWhenEveryFingerprintIsTheFirsts) {
  core::RecordedStep record;
  EXPECT_FALSE(core::weights_in_sync(record).has_value()) << "no replica";
  record.replicas.resize(3);
  for (core::ReplicaRecord& r : record.replicas) r.fingerprint = 42, r.has_fingerprint = true;
  EXPECT_EQ(core::weights_in_sync(record), true);
  record.replicas[2].fingerprint = 43;
  EXPECT_EQ(core::weights_in_sync(record), false);
  record.replicas[1].has_fingerprint = false;
  EXPECT_FALSE(core::weights_in_sync(record).has_value()) << "a replica without one yet";
}

}  // namespace
}  // namespace mirrorlab
