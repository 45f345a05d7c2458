// StepByStep: a training step driven one phase at a time (the Python custom loop's calls). Each
// replica's values read between the phases are the step's own, the weights at the end are those
// of train_step bit for bit, and a gradient changed between the phases changes what the step does:
// summed by the all-reduce, or applied by one replica only, when the replicas leave sync.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/session/step_by_step.h"
#include "core/strategy/divergence.h"
#include "tests/support/step_rig.h"

namespace mirrorlab {
namespace {

using testing_rig::Rig;
using Case = testing_rig::AlgorithmCase;
using core::StepBoundary;

class StepByStepCase : public ::testing::TestWithParam<Case> {};

TEST_P(StepByStepCase, WalksEveryBoundaryAndEndsWithTrainStepsWeights) {
  const Case c = GetParam();
  Rig stepped(c.replicas, c.all_reduce), whole(c.replicas, c.all_reduce);
  const std::size_t n = static_cast<std::size_t>(c.replicas);
  const int k = stepped.strategy->all_reduce().num_steps(c.replicas);
  for (std::size_t s = 0; s < 2; ++s) {
    const std::size_t count = 4 * n - s;  // the second batch is uneven
    whole.strategy->train_step(whole.batch(4 * n * s, count));
    core::StepByStep step(*stepped.strategy, stepped.batch(4 * n * s, count));
    std::vector<StepBoundary> seen;
    while (!step.ended()) {
      seen.push_back(step.held_at()->boundary);
      step.advance();
    }
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(4 + k));
    EXPECT_EQ(seen[0], StepBoundary::kSplit);
    EXPECT_EQ(seen[1], StepBoundary::kForward);
    EXPECT_EQ(seen[2], StepBoundary::kBackward);
    EXPECT_EQ(seen[3], StepBoundary::kAllReduceStep);
    EXPECT_EQ(seen.back(), StepBoundary::kUpdate);
    std::int64_t examples = 0;
    for (const core::LossStats& r : step.finish()) examples += r.count;
    EXPECT_EQ(examples, static_cast<std::int64_t>(count));
  }
  EXPECT_EQ(stepped.strategy->steps_done(), 2);
  EXPECT_EQ(stepped.strategy->replica(0).model().params_to_host(),
            whole.strategy->replica(0).model().params_to_host());
}

TEST_P(StepByStepCase, TheAllReducedGradientsAreTheSumOfEachReplicasOwn) {
  const Case c = GetParam();
  Rig rig(c.replicas, c.all_reduce);
  core::StepByStep step(*rig.strategy, rig.batch(0, 4 * static_cast<std::size_t>(c.replicas)));
  step.advance_to(StepBoundary::kBackward);
  std::vector<std::vector<float>> before;
  for (int r = 0; r < step.replicas(); ++r) before.push_back(step.gradients(r));
  step.advance_to(StepBoundary::kUpdate);
  ASSERT_FALSE(step.ended());
  const std::vector<float> after = step.gradients(0);
  for (int r = 1; r < step.replicas(); ++r) EXPECT_EQ(step.gradients(r), after) << "replica " << r;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    double sum = 0;
    for (const auto& g : before) sum += g[i];
    differing += std::abs(after[i] - sum) > 1e-6 * (1 + std::abs(sum));
  }
  EXPECT_EQ(differing, 0u);
  const std::uint64_t print = step.fingerprint(0);
  for (int r = 1; r < step.replicas(); ++r) EXPECT_EQ(step.fingerprint(r), print);
  step.finish();
}

INSTANTIATE_TEST_SUITE_P(RingAndReduceToOne, StepByStepCase, testing_rig::kAlgorithmCases,
                         testing_rig::case_name);

TEST(StepByStep, EachReplicaHoldsItsShardItsLogitsAndTheirLoss) {
  Rig rig(2, "ring");
  core::StepByStep step(*rig.strategy, rig.batch(4, 7));  // shards of 4 and 3
  EXPECT_EQ(step.labels(0),
            std::vector<std::uint8_t>(rig.data.labels.begin() + 4, rig.data.labels.begin() + 8));
  EXPECT_EQ(step.labels(1),
            std::vector<std::uint8_t>(rig.data.labels.begin() + 8, rig.data.labels.begin() + 11));
  EXPECT_EQ(step.images(1).size(), 3u * 28 * 28);
  try {
    step.labels(2);
    ADD_FAILURE() << "replica 2 of 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no replica 2: the replicas are 0 to 1");
  }
  EXPECT_THROW(step.logits(0), std::logic_error);
  EXPECT_THROW(step.gradients(0), std::logic_error);
  step.advance();
  std::vector<double> sums;
  for (int r = 0; r < 2; ++r) {
    const std::vector<double> losses = core::per_example_loss(step.logits(r), step.labels(r), 10);
    EXPECT_EQ(losses.size(), r == 0 ? 4u : 3u);
    sums.push_back(std::accumulate(losses.begin(), losses.end(), 0.0));
  }
  const std::vector<core::LossStats> results = step.finish();
  for (std::size_t r = 0; r < 2; ++r) EXPECT_NEAR(results[r].loss_sum, sums[r], 1e-9 * sums[r]);
  EXPECT_THROW(step.labels(0), std::logic_error);
  EXPECT_THROW(step.advance(), std::logic_error);
}

TEST(StepByStep, GradientsChangedBeforeTheAllReduceAreSummedInSync) {
  Rig rig(2, "ring");
  core::StepByStep step(*rig.strategy, rig.batch(0, 8));
  step.advance_to(StepBoundary::kBackward);
  std::vector<float> zero(step.gradients(1).size(), 0.0F);
  const std::vector<float> own = step.gradients(0);
  step.set_gradients(1, zero);
  step.advance_to(StepBoundary::kUpdate);
  EXPECT_EQ(step.gradients(0), own);  // 0's alone: replica 1 added nothing
  EXPECT_EQ(step.gradients(1), own);
  EXPECT_EQ(step.fingerprint(0), step.fingerprint(1));
  EXPECT_NO_THROW(step.finish());
}

TEST(StepByStep, AGradientChangedAfterTheAllReduceTakesTheReplicasOutOfSync) {
  Rig rig(2, "ring");
  core::StepByStep step(*rig.strategy, rig.batch(0, 8));
  step.advance_to(StepBoundary::kAllReduceStep);
  while (step.held_at()->boundary == StepBoundary::kAllReduceStep) step.advance();
  ASSERT_EQ(step.held_at()->boundary, StepBoundary::kUpdate);
  const std::vector<float> before_update = step.weights(1);
  EXPECT_THROW(step.set_gradients(1, before_update), std::logic_error);  // after the update: no
  step.finish();
  // Between the all-reduce's last step and the update there is no boundary: change the reduced
  // gradients at its last step instead.
  core::StepByStep next(*rig.strategy, rig.batch(8, 8));
  next.advance_to(StepBoundary::kAllReduceStep);
  while (next.held_at()->all_reduce_step + 1 < next.held_at()->all_reduce_steps) next.advance();
  std::vector<float> doubled = next.gradients(1);
  for (float& g : doubled) g *= 2;
  next.set_gradients(1, doubled);
  next.advance();
  ASSERT_EQ(next.held_at()->boundary, StepBoundary::kUpdate);
  EXPECT_NE(next.fingerprint(0), next.fingerprint(1));
  try {
    next.finish();
    ADD_FAILURE() << "the step ended in sync";
  } catch (const core::ReplicasOutOfSync& e) {
    EXPECT_NE(std::string(e.what()).find("1"), std::string::npos) << e.what();
  }
}

TEST(StepByStep, ANanGradientEndsTheStepBeforeTheAllReduce) {
  Rig rig(2, "ring");
  core::StepByStep step(*rig.strategy, rig.batch(0, 8));
  step.advance_to(StepBoundary::kBackward);
  std::vector<float> g = step.gradients(0);
  g[g.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  step.set_gradients(0, g);
  EXPECT_THROW(step.advance(), core::DivergedError);
  EXPECT_TRUE(step.ended());
  EXPECT_THROW(step.finish(), core::DivergedError);
}

TEST(StepByStep, AStepLeftHeldRunsToItsEnd) {
  Rig rig(3, "reduce-to-one");
  {
    core::StepByStep step(*rig.strategy, rig.batch(0, 12));
    step.advance();
  }
  EXPECT_EQ(rig.strategy->steps_done(), 1);
  core::StepByStep again(*rig.strategy, rig.batch(12, 12));  // the listener was removed
  EXPECT_EQ(again.finish().size(), 3u);
  EXPECT_EQ(rig.strategy->steps_done(), 2);
}

TEST(StepByStep, SetGradientsRefusesAnotherCount) {
  Rig rig(2, "ring");
  core::StepByStep step(*rig.strategy, rig.batch(0, 8));
  step.advance_to(StepBoundary::kBackward);
  EXPECT_THROW(step.set_gradients(0, std::vector<float>(3)), std::invalid_argument);
  EXPECT_THROW(step.gradients(2), std::invalid_argument);
  step.finish();
}

}  // namespace
}  // namespace mirrorlab
