// One replica's compute measured as MirroredStrategy times it (core/strategy/replica_compute.h):
// every step counted, the phases that make it up, stopping when asked, and a model that does not
// fit its device refused; the same medians from a run's own events (the GUI's Compare panel on
// this machine), worked by hand. What the times are is a benchmark's business, not a test's.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/strategy/replica_compute.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {
namespace {

StrategyOptions mlp() {
  StrategyOptions o;
  o.model = ModelKind::kMlp;
  return o;
}

TEST(ReplicaCompute, TimesEveryStepsForwardBackwardAndUpdate) {
  set_blas_single_threaded();
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 256);
  std::vector<std::pair<int, int>> seen;
  const ReplicaCompute c =
      measure_replica_compute(*registry.logical_devices().front(), mlp(), {8, 3, 1, 60},
                              [&](int done, int planned) { seen.emplace_back(done, planned); });
  EXPECT_EQ(c.steps, 3);
  EXPECT_FALSE(c.stopped);
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{1, 3}, {2, 3}, {3, 3}}));
  EXPECT_GT(c.forward, 0);
  EXPECT_GT(c.backward, 0);
  EXPECT_GT(c.update, 0);
  // Each step's sum is at least each of its parts, so the sums' median is at least each part's
  // (a median of sums is not the sum of medians, so no more than that).
  EXPECT_GE(c.seconds, c.forward);
  EXPECT_GE(c.seconds, c.backward);
  EXPECT_GE(c.seconds, c.update);
}

TEST(ReplicaCompute, StopsWhenAsked) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 256);
  int steps_seen = 0;
  const ReplicaCompute c = measure_replica_compute(
      *registry.logical_devices().front(), mlp(), {8, 50, 0, 60},
      [&](int done, int) { steps_seen = done; }, [&] { return steps_seen >= 2; });
  EXPECT_EQ(c.steps, 2);
  EXPECT_TRUE(c.stopped);
  EXPECT_GT(c.seconds, 0);
}

TEST(ReplicaCompute, RefusesAModelThatDoesNotFitAndOptionsThatAreNotPositive) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 4);  // MiB: the CNN's weights alone need 11
  StrategyOptions cnn;
  vgpu::Device& device = *registry.logical_devices().front();
  EXPECT_THROW(measure_replica_compute(device, cnn, {8, 1, 0, 60}), vgpu::OutOfMemoryError);
  EXPECT_THROW(measure_replica_compute(device, mlp(), {0, 1, 0, 60}), std::invalid_argument);
  EXPECT_THROW(measure_replica_compute(device, mlp(), {8, 0, 0, 60}), std::invalid_argument);
}

// A run's events as the strategy records them, each phase `ms` milliseconds long.
struct EventsByHand {
  vgpu::TimePoint now{};
  std::vector<RunEvent> events;
  void add(int device, Phase phase, std::int64_t step, double ms) {
    const vgpu::TimePoint end = now + std::chrono::microseconds(static_cast<int>(ms * 1000));
    events.push_back({device, phase, step, now, end, 0});
    now = end;
  }
  // One training step on two devices: device d computes forward f, backward b, update u, each
  // scaled by (1 + d) (the second replica twice as slow), and an all-reduce that is not counted.
  void step(std::int64_t step, double f, double b, double u) {
    for (int d = 0; d < 2; ++d) add(d, Phase::kSplit, step, 1);
    for (int d = 0; d < 2; ++d) add(d, Phase::kForward, step, f * (1 + d));
    for (int d = 0; d < 2; ++d) add(d, Phase::kBackward, step, b * (1 + d));
    for (int d = 0; d < 2; ++d) add(d, Phase::kAllReduce, step, 50);
    for (int d = 0; d < 2; ++d) add(d, Phase::kUpdate, step, u * (1 + d));
  }
};

TEST(ReplicaCompute, FromARunsEventsEachReplicaAndStepIsOneSample) {
  EventsByHand run;
  run.add(0, Phase::kBroadcastInit, 0, 9);
  run.step(0, 100, 100, 100);            // not asked for
  run.step(1, 1, 2, 1);                  // sums 4 and 8
  run.add(0, Phase::kEvaluate, 1, 500);  // evaluation counts its own batches: never counted
  run.step(2, 2, 3, 1);                  // 6 and 12
  run.step(3, 3, 4, 1);                  // 8 and 16
  run.step(4, 100, 100, 100);            // not asked for either
  const ReplicaCompute c = replica_compute_of(run.events, {1, 2, 3});
  EXPECT_EQ(c.steps, 3);
  // Samples 4, 6, 8, 8, 12, 16 ms: the median is (8 + 8) / 2.
  EXPECT_NEAR(c.seconds, 0.008, 1e-9);
  EXPECT_NEAR(c.forward, 0.0025, 1e-9);  // 1 2 2 3 4 6
  EXPECT_NEAR(c.backward, 0.004, 1e-9);  // 2 3 4 4 6 8
  EXPECT_NEAR(c.update, 0.0015, 1e-9);   // 1 1 1 2 2 2
  // A step with no events is not counted; none asked, none counted.
  EXPECT_EQ(replica_compute_of(run.events, {3, 7}).steps, 1);
  EXPECT_NEAR(replica_compute_of(run.events, {3, 7}).seconds, 0.012, 1e-9);
  EXPECT_EQ(replica_compute_of(run.events, {}).steps, 0);
  EXPECT_EQ(replica_compute_of(run.events, {}).seconds, 0);
}

}  // namespace
}  // namespace mirrorlab::core
