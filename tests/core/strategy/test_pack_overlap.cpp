// Packs that overlap backward (PackOptions::overlap): each pack's all-reduce starts on the
// replica's communication lane as soon as backward has written it. Threads meet here, so these
// run under ThreadSanitizer too (label tsan).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/session/step_recorder.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/faults.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/hang_guard.h"
#include "tests/support/training_reference.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

core::StrategyOptions mlp_in_packs(bool overlap) {
  core::StrategyOptions o =
      testing_reference::options_for(core::ModelKind::kMlp, core::OptimizerKind::kSgd, 0.05f);
  o.all_reduce = "ring";
  o.packs.bytes_per_pack = 4096;  // 3 packs: the last layer, dense_1, dense
  o.packs.overlap = overlap;
  return o;
}

// For each step and replica: when its backward ended, and when its first pack's all-reduce was
// asked for (the wait for the others begins as the lane takes the pack).
struct PackTimes {
  int overlapped = 0;  // (step, replica) pairs whose first pack was under way before backward ended
  int pairs = 0;
  int on_lane = 0;                    // all-reduces on the replicas' communication lanes
  std::map<int, int> all_reduces_of;  // per pack
  std::string trace;                  // the run's Chrome trace
};

PackTimes pack_times(bool overlap, int steps) {
  const core::Dataset data = core::synthetic_dataset(64 * 2 * steps);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 256);
  core::EventStore events;
  core::MirroredStrategy strategy(registry.logical_devices(), mlp_in_packs(overlap), &events);
  EXPECT_EQ(strategy.replica(0).communication_lane() != nullptr, overlap);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  for (int s = 0; s < steps; ++s) {
    strategy.train_step(core::GlobalBatch{
        &data, std::span(order).subspan(static_cast<std::size_t>(s) * 128, 128), 64});
  }
  PackTimes t;
  int all_reduces = 0;
  for (const core::RunEvent& e : events.snapshot()) {
    if (e.phase != core::Phase::kAllReduce) continue;
    ++all_reduces;
    ++t.all_reduces_of[e.pack];
    t.on_lane += e.lane == core::Lane::kCommunication;
  }
  t.trace = events.chrome_trace({"GPU:0", "GPU:1"});
  EXPECT_EQ(all_reduces, steps * 2 * 3) << "every pack of every step on every replica";
  const core::PacksDuringBackward early = core::packs_during_backward(events.snapshot());
  t.overlapped = early.early;
  t.pairs = early.pairs;
  return t;
}

// With overlap the last layer's pack is sent while backward computes the two layers before it
// (the MLP's 784x256 layer is most of backward's work); without, never before backward ends.
TEST(PackOverlap, AnAllReduceStartsWhileBackwardStillRunsOnlyWithOverlap) {
  testing::within_seconds(120, "packs overlapping backward", [] {
    const PackTimes on = pack_times(true, 6);
    const PackTimes off = pack_times(false, 3);
    EXPECT_EQ(on.pairs, 12);
    EXPECT_GT(on.overlapped, 0) << "no pack's all-reduce began before its replica's backward ended";
    EXPECT_EQ(off.pairs, 6);
    EXPECT_EQ(off.overlapped, 0) << "without overlap a pack began before backward ended";
    // Each event names its pack; with overlap every all-reduce ran on the communication lane,
    // which the trace shows as a thread of its own under each device.
    EXPECT_EQ(on.all_reduces_of, (std::map<int, int>{{0, 12}, {1, 12}, {2, 12}}));
    EXPECT_EQ(off.all_reduces_of, (std::map<int, int>{{0, 6}, {1, 6}, {2, 6}}));
    EXPECT_EQ(on.on_lane, 36);
    EXPECT_EQ(off.on_lane, 0);
    EXPECT_NE(on.trace.find(R"("tid":2,"args":{"name":"GPU:0 communication"})"), std::string::npos);
    EXPECT_NE(on.trace.find(R"x("tid":3,"name":"all-reduce (pack 3)")x"), std::string::npos);
    EXPECT_EQ(off.trace.find("communication"), std::string::npos);
    EXPECT_NE(off.trace.find(R"x("tid":1,"name":"all-reduce (pack 2)")x"), std::string::npos);
  });
}

std::vector<float> trained(bool overlap, int devices) {
  return testing_reference::mirrored_training(core::synthetic_dataset(41), mlp_in_packs(overlap),
                                              devices, nullptr, 4 * devices, 5, 3);
}

TEST(PackOverlap, OverlapKeepsTheBitsOfPacksAfterBackward) {
  testing::within_seconds(120, "overlap against none", [] {
    for (int devices : {2, 3}) {
      const std::vector<float> on = trained(true, devices), off = trained(false, devices);
      ASSERT_EQ(on.size(), off.size());
      EXPECT_EQ(std::memcmp(on.data(), off.data(), on.size() * sizeof(float)), 0)
          << devices << " devices";
    }
  });
}

// A replica whose loss is NaN stops the step while the others' packs are on their lanes: they are
// released, nobody updates, and the strategy trains on after.
TEST(PackOverlap, ANanLossOnOneReplicaStopsTheStepWithThePacksInFlight) {
  testing::within_seconds(120, "a NaN loss with packs in flight", [] {
    const core::Dataset data = core::synthetic_dataset(48);
    const auto order = core::shuffled_indices(data.size(), 1, 1);
    vgpu::DeviceRegistry registry;
    registry.set_logical_device_configuration(3, 256);
    core::MirroredStrategy strategy(registry.logical_devices(), mlp_in_packs(true));
    const core::GlobalBatch batch{&data, std::span(order).subspan(0, 12), 4};
    strategy.train_step(batch);
    std::vector<std::uint64_t> before;
    for (int r = 0; r < 3; ++r) before.push_back(strategy.replica(r).model().params_fingerprint());
    // The last layer's bias on replica 2: its logits, and so its loss, are NaN.
    core::Model& model = strategy.replica(2).model();
    const float saved = model.params()[model.num_params() - 1];
    model.params()[model.num_params() - 1] = std::numeric_limits<float>::quiet_NaN();
    try {
      strategy.train_step(batch);
      FAIL() << "the NaN loss was not caught";
    } catch (const core::DivergedError& e) {
      EXPECT_EQ(e.where().replica, 2);
      EXPECT_TRUE(e.where().in_loss()) << e.what();
    }
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(strategy.replica(r).model().params_fingerprint(),
                before[static_cast<std::size_t>(r)])
          << "replica " << r << " took the step";
    }
    model.params()[model.num_params() - 1] = saved;
    strategy.train_step(batch);  // and on it goes
    EXPECT_EQ(strategy.steps_done(), 2);
  });
}

// Steps that stop at their boundaries for a listener (here a NaN fault, which writes the
// gradients after backward) run their packs after backward: the NaN is named, and no weight moves.
TEST(PackOverlap, AFaultsStepRunsItsPacksAfterBackwardAndCatchesTheNan) {
  testing::within_seconds(120, "a NaN fault with packs", [] {
    const core::Dataset data = core::synthetic_dataset(48);
    const auto order = core::shuffled_indices(data.size(), 1, 1);
    vgpu::DeviceRegistry registry;
    registry.set_logical_device_configuration(2, 256);
    core::MirroredStrategy strategy(registry.logical_devices(), mlp_in_packs(true));
    core::FaultPlan plan;
    plan.nans.push_back(core::NanInGradient{1, 2});
    core::FaultInjector faults;
    faults.attach(strategy, plan);
    const core::GlobalBatch batch{&data, std::span(order).subspan(0, 8), 4};
    strategy.train_step(batch);
    const std::uint64_t before = strategy.replica(0).model().params_fingerprint();
    EXPECT_THROW(strategy.train_step(batch), core::DivergedError);
    EXPECT_EQ(strategy.replica(0).model().params_fingerprint(), before);
  });
}

// The GUI's recorder wants every boundary, but not at the price of the overlap: a step whose packs
// go beside backward is recorded without them (the sums, the fingerprints, no 'before', no
// all-reduce steps), one without overlap with all of them.
TEST(PackOverlap, TheStepRecorderKeepsAnOverlappedStepWithoutItsBoundaries) {
  testing::within_seconds(120, "the recorder on packs", [] {
    for (const bool overlap : {true, false}) {
      const core::Dataset data = core::synthetic_dataset(64 * 2 * 3);
      vgpu::DeviceRegistry registry;
      registry.set_logical_device_configuration(2, 256);
      core::EventStore events;
      core::MirroredStrategy strategy(registry.logical_devices(), mlp_in_packs(overlap), &events);
      core::StepRecorder recorder;
      strategy.add_listener(&recorder);
      recorder.choose_layer(2);
      const auto order = core::shuffled_indices(data.size(), 1, 1);
      for (int s = 0; s < 3; ++s) {
        strategy.train_step(core::GlobalBatch{
            &data, std::span(order).subspan(static_cast<std::size_t>(s) * 128, 128), 64});
      }
      const core::RecordedStep r = recorder.snapshot();
      EXPECT_EQ(r.step, 2);
      EXPECT_TRUE(r.complete);
      EXPECT_EQ(r.packs, 3);
      EXPECT_EQ(r.packs_overlapped, overlap);
      ASSERT_EQ(r.replicas.size(), 2u);
      EXPECT_EQ(r.replicas[0].gradient_after, r.replicas[1].gradient_after);
      EXPECT_EQ(r.replicas[0].gradient_after.size(), 128u * 10u + 10u);
      EXPECT_TRUE(r.replicas[0].has_fingerprint && r.replicas[1].has_fingerprint);
      EXPECT_EQ(r.replicas[0].fingerprint, r.replicas[1].fingerprint);
      EXPECT_EQ(r.replicas[0].fingerprint, strategy.replica(0).last_fingerprint());
      EXPECT_EQ(r.replicas[0].gradient_before.empty(), overlap);
      EXPECT_EQ(r.collective_steps.size(), overlap ? 0u : 6u) << "3 packs of the ring's 2 steps";
      int on_lane = 0;
      for (const core::RunEvent& e : events.snapshot()) {
        on_lane += e.phase == core::Phase::kAllReduce && e.lane == core::Lane::kCommunication;
      }
      EXPECT_EQ(on_lane, overlap ? 3 * 2 * 3 : 0) << "every pack of every step beside backward";
    }
  });
}

}  // namespace
}  // namespace mirrorlab
