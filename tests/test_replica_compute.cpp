// One replica's compute measured as MirroredStrategy times it (core/strategy/replica_compute.h):
// every step counted, the phases that make it up, stopping when asked, and a model that does not
// fit its device refused. What the times are is a benchmark's business, not a test's.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/nn/kernels_cpu.h"
#include "core/strategy/replica_compute.h"
#include "virtualgpu/device_registry.h"
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

}  // namespace
}  // namespace mirrorlab::core
