// The Compare panel's measurement: real steps and a real sweep per algorithm, NCCL explained.
#include <gtest/gtest.h>

#include "core/io/synthetic_dataset.h"
#include "core/session/algorithm_comparison.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

core::ComparisonOptions quick_options() {
  core::ComparisonOptions o;
  o.rounds = 2;
  o.batch_per_replica = 16;
  o.sweep = vgpu::AllReduceBenchOptions{4096, 16384, 2.0, 2, 1};
  return o;
}

core::StrategyOptions mlp() {
  core::StrategyOptions s;
  s.model = core::ModelKind::kMlp;
  return s;
}

TEST(AlgorithmComparison, MeasuresEveryAlgorithmTheDevicesCanRunAndSaysWhyNotTheOthers) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 256);
  const auto& devices = registry.logical_devices();
  const core::Dataset data = core::synthetic_dataset(256);
  const std::size_t before = devices[0]->memory().in_use();
  int progress_calls = 0;
  const core::AlgorithmComparison r = core::compare_algorithms(
      devices, data, mlp(), quick_options(), {}, [&](const auto&) { ++progress_calls; });

  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(progress_calls, 2);
  ASSERT_EQ(r.timings.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const core::AlgorithmTiming& t = r.timings[static_cast<std::size_t>(i)];
    EXPECT_TRUE(t.available) << t.algorithm;
    EXPECT_EQ(t.steps, 2) << t.algorithm;
    EXPECT_GT(t.all_reduce_seconds, 0.0) << t.algorithm;
    EXPECT_LE(t.all_reduce_seconds, t.step_seconds) << t.algorithm;
  }
  EXPECT_EQ(r.timings[0].algorithm, "reduce-to-one");
  EXPECT_EQ(r.timings[1].algorithm, "ring");
  EXPECT_EQ(r.timings[2].algorithm, "one-shot");
  // CPU-backed virtual GPUs cannot run NCCL: the row stays, with TensorFlow's reason.
  EXPECT_EQ(r.timings[3].algorithm, "nccl");
  EXPECT_FALSE(r.timings[3].available);
  EXPECT_NE(r.timings[3].reason.find("virtual"), std::string::npos) << r.timings[3].reason;

  EXPECT_EQ(r.gradient_bytes, 235146u * sizeof(float));  // the MLP's parameters
  EXPECT_GT(r.copy_bandwidth, 0.0);
  ASSERT_EQ(r.sweep.size(), 3u * 3u);  // 4, 8, 16 KiB for each available algorithm
  for (const auto& row : r.sweep) {
    EXPECT_EQ(row.wrong, 0u) << row.algorithm << " " << row.bytes;
    EXPECT_GT(row.algbw, 0.0);
  }
  // The contenders' models and the sweep's buffers went back to the devices.
  EXPECT_EQ(devices[0]->memory().in_use(), before);
}

TEST(AlgorithmComparison, StopsEarlyWhenCancelled) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 256);
  const core::Dataset data = core::synthetic_dataset(128);
  int polls = 0;
  const core::AlgorithmComparison r = core::compare_algorithms(
      registry.logical_devices(), data, mlp(), quick_options(), [&] { return ++polls > 1; });
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.error.empty());
  EXPECT_TRUE(r.sweep.empty());
}

TEST(AlgorithmComparison, DevicesTooSmallForTheContendersEndWithTheReason) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 1);  // 1 MiB: not even one MLP fits
  const core::Dataset data = core::synthetic_dataset(64);
  const core::AlgorithmComparison r =
      core::compare_algorithms(registry.logical_devices(), data, mlp(), quick_options());
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.error.find("/gpu:"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace mirrorlab
