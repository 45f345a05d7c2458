// Faults as a class watches them (core/strategy/faults.h): a straggler that every replica waits
// for, a device that fails in the middle of a step (every replica stops, nothing hangs, no
// weight moves), a NaN in one replica's gradient named before it reaches the weights. A failing
// replica never hangs any all-reduce algorithm, at any of its steps, on 2 to 8 replicas.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/strategy/faults.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/hang_guard.h"
#include "tests/support/step_rig.h"

namespace mirrorlab {
namespace {

// The stepping rig's strategy (MLP, SGD) with a fault injector, stepping 2 examples per replica.
struct FaultRig : testing_rig::Rig {
  explicit FaultRig(int replicas, const std::string& all_reduce = "ring")
      : Rig(replicas, all_reduce) {}
  core::LossStats step(int step) {
    const std::size_t n = 2u * static_cast<std::size_t>(strategy->num_replicas_in_sync());
    return strategy->train_step(batch((static_cast<std::size_t>(step) * n) % (data.size() - n), n));
  }
  std::vector<std::uint64_t> fingerprints() {
    std::vector<std::uint64_t> f;
    for (int r = 0; r < strategy->num_replicas_in_sync(); ++r) {
      f.push_back(strategy->replica(r).model().params_fingerprint());
    }
    return f;
  }
  core::FaultInjector faults;
};

TEST(Straggler, EveryOtherReplicaWaitsForItAtTheAllReduceAndTheWeightsDoNotChange) {
  FaultRig slow(3), plain(3);
  core::FaultPlan plan;
  plan.slow.push_back({1, 5.0});
  slow.faults.attach(*slow.strategy, plan);
  EXPECT_EQ(slow.strategy->replica(1).slowdown(), 5.0);
  EXPECT_EQ(slow.strategy->replica(0).slowdown(), 1.0);
  for (int s = 0; s < 6; ++s) {
    slow.step(s);
    plain.step(s);
  }
  EXPECT_EQ(slow.fingerprints(), plain.fingerprints()) << "a straggler changes time, not math";

  // Per step and device: when it arrived at the all-reduce and when the waiting ended.
  std::map<std::pair<std::int64_t, int>, core::RunEvent> waits;
  std::vector<double> waited(3, 0.0), computed(3, 0.0);
  for (const core::RunEvent& e : slow.events.snapshot()) {
    const double seconds = vgpu::seconds_between(e.begin, e.end);
    if (e.phase == core::Phase::kWait) {
      EXPECT_TRUE(waits.emplace(std::pair{e.step, e.device}, e).second) << "one wait a step";
      waited[static_cast<std::size_t>(e.device)] += seconds;
    }
    if (e.phase == core::Phase::kForward || e.phase == core::Phase::kBackward) {
      computed[static_cast<std::size_t>(e.device)] += seconds;
    }
  }
  ASSERT_EQ(waits.size(), 6u * 3u) << "every replica waits (if only a moment) in every step";
  for (std::int64_t s = 0; s < 6; ++s) {
    // Nobody's wait ends before the last replica has arrived.
    vgpu::TimePoint last_arrival{}, first_release = vgpu::TimePoint::max();
    for (int d = 0; d < 3; ++d) {
      last_arrival = std::max(last_arrival, waits[{s, d}].begin);
      first_release = std::min(first_release, waits[{s, d}].end);
    }
    EXPECT_LE(last_arrival, first_release) << "step " << s;
  }
  // The straggler computes longest and waits least; the others wait for it. (Orderings, not
  // timings: /gpu:1 sleeps 4 times its own compute time on top of it.)
  EXPECT_GT(computed[1], computed[0]);
  EXPECT_GT(computed[1], computed[2]);
  EXPECT_GT(waited[0], waited[1]);
  EXPECT_GT(waited[2], waited[1]);
}

TEST(Straggler, AFactorOutOfRangeOrADeviceTheRunHasNotIsRefusedChangingNothing) {
  FaultRig rig(2);
  for (const auto& [factor, device] : std::vector<std::pair<double, int>>{
           {0.5, 1}, {0.0, 1}, {-2.0, 1}, {NAN, 1}, {INFINITY, 1}, {1e9, 1}, {3.0, 2}, {3, -1}}) {
    core::FaultPlan plan;
    plan.slow.push_back({device, factor});
    EXPECT_THROW(rig.faults.attach(*rig.strategy, plan), std::invalid_argument)
        << factor << " on " << device;
    EXPECT_EQ(rig.strategy->replica(1).slowdown(), 1.0);
  }
  core::FaultPlan plan;
  plan.slow.push_back({2, 3.0});
  try {
    rig.faults.attach(*rig.strategy, plan);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "a slow device names /gpu:2, but the run has 2 devices (/gpu:0 to "
                 "/gpu:1)");
  }
}

// A failing device in each phase of step 3: the step stops on every replica with a sentence that
// names the device, the step and the phase; the weights are those after step 2 on every replica;
// the strategy counts 2 steps and goes on.
TEST(DeviceFailure, StopsTheStepOnEveryReplicaWithNoPartialUpdate) {
  FaultRig reference(3);
  reference.step(0);
  reference.step(1);
  const std::vector<std::uint64_t> after_two = reference.fingerprints();
  for (const auto& [phase, words] : std::vector<std::pair<core::FailurePhase, std::string>>{
           {core::FailurePhase::kSplit, "during its split, as its work ended"},
           {core::FailurePhase::kForward, "during its forward pass"},
           {core::FailurePhase::kBackward, "during its backward pass"},
           {core::FailurePhase::kAllReduce,
            "during the all-reduce (its step 2 of 4, reduce-scatter)"}}) {
    SCOPED_TRACE(core::to_string(phase));
    FaultRig rig(3);
    core::FaultPlan plan;
    plan.failures.push_back({2, 3, phase});
    rig.faults.attach(*rig.strategy, plan);
    rig.step(0);
    rig.step(1);
    testing::within_seconds(60, "the failing step", [&] {
      try {
        rig.step(2);
        ADD_FAILURE() << "the device did not fail";
      } catch (const core::DeviceFailed& e) {
        EXPECT_EQ(e.device(), "/gpu:2");
        EXPECT_EQ(e.step(), 3);
        const std::string what = e.what();
        EXPECT_EQ(what.find("/gpu:2 failed in step 3, " + words), 0u) << what;
        EXPECT_NE(what.find("none updated its weights: they are those after step 2"),
                  std::string::npos)
            << what;
      }
    });
    EXPECT_EQ(rig.fingerprints(), after_two);
    EXPECT_EQ(rig.strategy->steps_done(), 2);
    EXPECT_EQ(rig.strategy->replica(0).optimizer().iterations(), 2);
    EXPECT_EQ(rig.faults.fired(), 1);
    rig.step(2);  // a device fails once: the step runs again, as after a restart
    EXPECT_EQ(rig.strategy->steps_done(), 3);
  }
}

TEST(DeviceFailure, APlanThatCannotHappenIsRefused) {
  FaultRig rig(2, "reduce-to-one");
  core::FaultPlan late;
  late.failures.push_back({1, 3, core::FailurePhase::kAllReduce, 2});
  try {
    rig.faults.attach(*rig.strategy, late);
    ADD_FAILURE() << "accepted step 3 of a 2-step all-reduce";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the reduce-to-one all-reduce on 2 replicas has 2 steps"),
              std::string::npos)
        << e.what();
  }
  FaultRig one(1);
  core::FaultPlan alone;
  alone.failures.push_back({0, 1, core::FailurePhase::kAllReduce});
  EXPECT_THROW(one.faults.attach(*one.strategy, alone), std::invalid_argument);
  core::FaultPlan forward;  // one replica can still fail in its forward pass
  forward.failures.push_back({0, 1, core::FailurePhase::kForward});
  one.faults.attach(*one.strategy, forward);
  EXPECT_THROW(one.step(0), core::DeviceFailed);
}

// For every all-reduce algorithm, 2 to 8 replicas and every step of the all-reduce, a replica
// fails there (a different one as the step moves on): the training step ends on every replica
// within the limit, names the fault, and leaves every replica's weights as they were.
TEST(DeviceFailure, AFailingReplicaNeverHangsAnyAllReduceAtAnyOfItsSteps) {
  for (const std::string algorithm : {"reduce-to-one", "ring", "one-shot"}) {
    for (int n = 2; n <= 8; ++n) {
      FaultRig rig(n, algorithm);
      rig.step(0);
      const int steps = rig.strategy->all_reduce().num_steps(n);
      for (int k = 0; k < steps; ++k) {
        const int device = (k + n - 1) % n;  // the last rank first: reduce-to-one's far end
        const std::string what = algorithm + " on " + std::to_string(n) + ", device " +
                                 std::to_string(device) + " at step " + std::to_string(k);
        SCOPED_TRACE(what);
        core::FaultPlan plan;
        plan.failures.push_back({device, 2, core::FailurePhase::kAllReduce, k});
        rig.faults.attach(*rig.strategy, plan);
        const std::vector<std::uint64_t> before = rig.fingerprints();
        testing::within_seconds(60, what, [&] {
          try {
            rig.step(1);
            ADD_FAILURE() << "no failure";
          } catch (const core::DeviceFailed& e) {
            EXPECT_NE(std::string(e.what()).find("(its step " + std::to_string(k + 1) + " of " +
                                                 std::to_string(steps)),
                      std::string::npos)
                << e.what();
          }
        });
        EXPECT_EQ(rig.fingerprints(), before);
        EXPECT_EQ(rig.strategy->steps_done(), 1);
      }
      rig.faults.detach();
      rig.step(1);  // and the strategy still trains
      EXPECT_EQ(rig.strategy->steps_done(), 2);
    }
  }
}

TEST(NanInGradient, IsNamedOnItsReplicaBeforeItReachesTheWeights) {
  FaultRig rig(3);
  core::FaultPlan plan;
  plan.nans.push_back({1, 2});
  rig.faults.attach(*rig.strategy, plan);
  rig.step(0);
  const std::vector<std::uint64_t> after_one = rig.fingerprints();
  const std::size_t at = rig.strategy->replica(1).model().num_params() / 2;
  testing::within_seconds(60, "the step with a NaN", [&] {
    try {
      rig.step(1);
      ADD_FAILURE() << "the NaN was not caught";
    } catch (const core::DivergedError& e) {
      EXPECT_EQ(e.where().step, 2);
      EXPECT_EQ(e.where().replica, 1);
      EXPECT_EQ(e.where().device, "/gpu:1");
      EXPECT_EQ(e.where().layer, "dense");
      EXPECT_EQ(e.where().tensor, "dense/kernel");
      EXPECT_EQ(e.where().index, at);  // dense/kernel starts the flat buffer
      EXPECT_TRUE(std::isnan(e.where().value));
      EXPECT_NE(std::string(e.what()).find("training diverged in step 2: a gradient of dense on "
                                           "/gpu:1 (replica 1) is NaN (dense/kernel, element " +
                                           std::to_string(at) +
                                           "; found before the all-reduce: "
                                           "the weights are those after step 1)"),
                std::string::npos)
          << e.what();
    }
  });
  EXPECT_EQ(rig.fingerprints(), after_one);
}

}  // namespace
}  // namespace mirrorlab
