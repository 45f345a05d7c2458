// StepController: a training step stops at each phase boundary with every replica held there,
// walks on when told, releases everything on stop(), and changes nothing in the results.
#include <gtest/gtest.h>

#include "core/nn/fingerprint.h"
#include "core/session/step_control.h"
#include "core/session/step_recorder.h"
#include "tests/support/step_rig.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;
using testing_rig::Rig;
using testing_rig::step_through;
using Case = testing_rig::AlgorithmCase;
using core::StepBoundary;

class PausingAtPhases : public ::testing::TestWithParam<Case> {};

TEST_P(PausingAtPhases, StopsAtEveryBoundaryInOrderWithEveryReplicaHeld) {
  const Case c = GetParam();
  Rig rig(c.replicas, c.all_reduce);
  core::StepController controller;
  rig.strategy->add_listener(&controller);
  controller.pause_at_phases(true);
  const std::size_t n = static_cast<std::size_t>(c.replicas);

  const auto seen =
      step_through(rig, controller, rig.batch(0, 4 * n), [&](const core::PausePoint& p) {
        // Held means: no replica has recorded the next phase yet.
        switch (p.boundary) {
          case StepBoundary::kSplit:
            EXPECT_EQ(rig.events_of(core::Phase::kSplit), n);
            EXPECT_EQ(rig.events_of(core::Phase::kForward), 0u) << p.label();
            break;
          case StepBoundary::kForward:
            EXPECT_EQ(rig.events_of(core::Phase::kForward), n);
            EXPECT_EQ(rig.events_of(core::Phase::kBackward), 0u) << p.label();
            break;
          case StepBoundary::kBackward:
          case StepBoundary::kAllReduceStep:
            EXPECT_EQ(rig.events_of(core::Phase::kBackward), n);
            EXPECT_EQ(rig.events_of(core::Phase::kAllReduce), 0u) << p.label();
            break;
          case StepBoundary::kUpdate:
            EXPECT_EQ(rig.events_of(core::Phase::kUpdate), n);
            break;
        }
        EXPECT_TRUE(controller.advance());
      });

  const int k = rig.strategy->all_reduce().num_steps(c.replicas);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(4 + k));
  EXPECT_EQ(seen[0].boundary, StepBoundary::kSplit);
  EXPECT_EQ(seen[1].boundary, StepBoundary::kForward);
  EXPECT_EQ(seen[2].boundary, StepBoundary::kBackward);
  for (int i = 0; i < k; ++i) {
    const core::PausePoint& p = seen[static_cast<std::size_t>(3 + i)];
    EXPECT_EQ(p.boundary, StepBoundary::kAllReduceStep);
    EXPECT_EQ(p.all_reduce_step, i);
    EXPECT_EQ(p.all_reduce_steps, k);
    EXPECT_FALSE(p.all_reduce_phase.empty());
  }
  EXPECT_EQ(seen.back().boundary, StepBoundary::kUpdate);
  for (const auto& p : seen) EXPECT_EQ(p.step, 0);
  EXPECT_EQ(controller.pauses(), seen.size());
  EXPECT_EQ(rig.strategy->steps_done(), 1);
  EXPECT_EQ(seen[4].label(), "step 1: all-reduce step 2 of " + std::to_string(k) + " (" +
                                 seen[4].all_reduce_phase + ")");
  EXPECT_EQ(seen[2].label(), "step 1: after backward");
}

INSTANTIATE_TEST_SUITE_P(RingAndReduceToOne, PausingAtPhases, testing_rig::kAlgorithmCases,
                         testing_rig::case_name);

TEST(StepController, FinishStepPausesOnlyAtTheEndOfTheStep) {
  Rig rig(2, "ring");
  core::StepController controller;
  rig.strategy->add_listener(&controller);
  controller.pause_at_phases(true);
  int calls = 0;
  const auto seen = step_through(rig, controller, rig.batch(0, 8), [&](const core::PausePoint& p) {
    if (calls++ == 0) {
      EXPECT_EQ(p.boundary, StepBoundary::kSplit);
      controller.finish_step();
    } else {
      controller.advance();
    }
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].boundary, StepBoundary::kUpdate);
}

TEST(StepController, RunFreelyReleasesTheStepAndLaterStepsDoNotPause) {
  Rig rig(3, "ring");
  core::StepController controller;
  rig.strategy->add_listener(&controller);
  controller.pause_at_phases(true);
  const auto seen = step_through(rig, controller, rig.batch(0, 12),
                                 [&](const core::PausePoint&) { controller.run_freely(); });
  EXPECT_EQ(seen.size(), 1u);
  rig.strategy->train_step(rig.batch(12, 12));  // would hang here if it still paused
  EXPECT_EQ(controller.pauses(), 1u);
  EXPECT_EQ(rig.strategy->steps_done(), 2);
}

class StopWhilePaused : public ::testing::TestWithParam<StepBoundary> {};

TEST_P(StopWhilePaused, ReleasesEveryReplicaWithStepStopped) {
  Rig rig(3, "ring");
  core::StepController controller;
  rig.strategy->add_listener(&controller);
  controller.pause_at_phases(true);
  const StepBoundary stop_at = GetParam();
  EXPECT_THROW(step_through(rig, controller, rig.batch(0, 12),
                            [&](const core::PausePoint& p) {
                              if (p.boundary == stop_at) {
                                controller.stop();
                              } else {
                                controller.advance();
                              }
                            }),
               core::StepStopped);
  EXPECT_TRUE(controller.stopped());
  EXPECT_FALSE(controller.paused_at().has_value());
  // A stopped controller stops every later step before it starts.
  EXPECT_THROW(rig.strategy->train_step(rig.batch(12, 12)), core::StepStopped);
  // Evaluation does not step and still works (the session may want final numbers).
  EXPECT_EQ(rig.strategy->evaluate(rig.data, 4).count, static_cast<std::int64_t>(rig.data.size()));
}

INSTANTIATE_TEST_SUITE_P(AtEachKindOfBoundary, StopWhilePaused,
                         ::testing::Values(StepBoundary::kSplit, StepBoundary::kBackward,
                                           StepBoundary::kAllReduceStep, StepBoundary::kUpdate),
                         [](const auto& info) {
                           std::string name = core::to_string(info.param);
                           for (char& ch : name) ch = ch == ' ' || ch == '-' ? '_' : ch;
                           return name;
                         });

TEST(StepController, AFailingReplicaReleasesTheOthersWaitingAtABoundary) {
  Rig rig(3, "ring");
  core::StepController controller;
  rig.strategy->add_listener(&controller);
  controller.pause_at_phases(true);
  std::future<void> step = std::async(std::launch::async, [&] {
    rig.strategy->run(rig.batch(0, 12), [](core::ReplicaContext& ctx) {
      if (ctx.replica_id_in_sync_group() == 1) throw std::runtime_error("replica 1 broke");
      ctx.forward();  // the others wait for replica 1 after forward
      return core::LossStats{};
    });
  });
  // The split pause comes first; release it, then replica 1 fails while the others wait.
  ASSERT_TRUE(controller.wait_until_paused(30s));
  controller.advance();
  ASSERT_EQ(step.wait_for(30s), std::future_status::ready) << "the other replicas hang";
  try {
    step.get();
    ADD_FAILURE() << "the failure of replica 1 was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "replica 1 broke");
  }
}

std::vector<std::uint64_t> train_and_fingerprint(core::StepController* controller,
                                                 core::StepRecorder* recorder,
                                                 bool step_through_phases) {
  Rig rig(3, "ring");
  rig.strategy->add_listener(controller);
  rig.strategy->add_listener(recorder);
  if (controller && step_through_phases) controller->pause_at_phases(true);
  // 40 examples in global batches of 12: the fourth is short (4 examples: 4, 0, 0).
  for (std::size_t i = 0; i < 4; ++i) {
    const core::GlobalBatch b = rig.batch(i * 12, i < 3 ? 12 : 4);
    if (controller && step_through_phases) {
      step_through(rig, *controller, b, [&](const core::PausePoint&) { controller->advance(); });
    } else {
      rig.strategy->train_step(b);
    }
  }
  std::vector<std::uint64_t> prints;
  for (int r = 0; r < 3; ++r)
    prints.push_back(core::fingerprint(rig.strategy->replica(r).model().params()));
  return prints;
}

TEST(StepController, ResultsAreBitIdenticalWithOrWithoutControllerAndRecorder) {
  const auto plain = train_and_fingerprint(nullptr, nullptr, false);
  core::StepController free_running;
  core::StepRecorder recorder;
  const auto watched = train_and_fingerprint(&free_running, &recorder, false);
  core::StepController stepping;
  core::StepRecorder recorder2;
  const auto stepped = train_and_fingerprint(&stepping, &recorder2, true);
  EXPECT_EQ(plain[0], plain[1]);
  EXPECT_EQ(plain[0], plain[2]);
  EXPECT_EQ(watched, plain);
  EXPECT_EQ(stepped, plain);
  EXPECT_EQ(free_running.pauses(), 0u);
  EXPECT_EQ(stepping.pauses(),
            4u * (4 + 4));  // 4 steps x (split, forward, backward, 4 ring steps, update)
}

}  // namespace
}  // namespace mirrorlab
