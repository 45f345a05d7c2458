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
#include "core/strategy/faults.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "core/strategy/run_events.h"
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
  std::map<std::pair<std::int64_t, int>, vgpu::TimePoint> backward_end, first_wait;
  int all_reduces = 0;
  for (const core::RunEvent& e : events.snapshot()) {
    const auto key = std::pair{e.step, e.device};
    if (e.phase == core::Phase::kBackward) backward_end[key] = e.end;
    if (e.phase == core::Phase::kWait && !first_wait.count(key)) first_wait[key] = e.begin;
    if (e.phase == core::Phase::kAllReduce) ++all_reduces;
  }
  EXPECT_EQ(all_reduces, steps * 2 * 3) << "every pack of every step on every replica";
  PackTimes t;
  for (const auto& [key, end] : backward_end) {
    ++t.pairs;
    if (first_wait.count(key) && first_wait[key] < end) ++t.overlapped;
  }
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

}  // namespace
}  // namespace mirrorlab
