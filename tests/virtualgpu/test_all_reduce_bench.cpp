// The all-reduce benchmark harness: its sweep, its bit-exact check (which must catch a broken
// algorithm) and its bandwidth arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/ring_all_reduce.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/measure/all_reduce_bench.h"
#include "virtualgpu/measure/stream_bandwidth.h"

namespace mirrorlab::vgpu {
namespace {

TEST(AllReduceBench, SweepSizesMultiplyByTheFactorInWholeFloats) {
  AllReduceBenchOptions o;
  o.min_bytes = 4;
  o.max_bytes = 64;
  o.step_factor = 2;
  EXPECT_EQ(sweep_sizes(o), (std::vector<std::size_t>{4, 8, 16, 32, 64}));
  o.min_bytes = 1;  // less than a float: one float
  o.max_bytes = 10;
  o.step_factor = 3;
  EXPECT_EQ(sweep_sizes(o), (std::vector<std::size_t>{4}));
  o.min_bytes = 100;
  o.max_bytes = 10;
  EXPECT_THROW(sweep_sizes(o), std::invalid_argument);
  o.min_bytes = 4;
  o.step_factor = 1.0;
  EXPECT_THROW(sweep_sizes(o), std::invalid_argument);
}

class AllReduceBenchOnDevices : public ::testing::TestWithParam<const char*> {};

TEST_P(AllReduceBenchOnDevices, EveryRowIsExactAndItsBandwidthsAgree) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 16);
  AllReduceBenchOptions o;
  o.min_bytes = 4;
  o.max_bytes = 1 << 16;
  o.step_factor = 4;
  o.iterations = 3;
  o.warmup_iterations = 1;
  const auto algorithm = make_all_reduce(GetParam());
  int seen = 0;
  const auto rows = run_allreduce_sweep(registry.logical_devices(), *algorithm, o, 1e10,
                                        [&](const AllReduceBenchRow&) { ++seen; });
  ASSERT_EQ(rows.size(), sweep_sizes(o).size());
  EXPECT_EQ(seen, static_cast<int>(rows.size()));
  for (const AllReduceBenchRow& row : rows) {
    EXPECT_EQ(row.wrong, 0u) << row.bytes;
    EXPECT_EQ(row.count * sizeof(float), row.bytes);
    EXPECT_GT(row.seconds, 0.0);
    EXPECT_DOUBLE_EQ(row.algbw, row.bytes / row.seconds);
    EXPECT_DOUBLE_EQ(row.busbw, row.algbw * 2.0 * 2 / 3);
    EXPECT_DOUBLE_EQ(row.bound_fraction, 2.0 * 3 * row.bytes / 1e10 / row.seconds);
    EXPECT_DOUBLE_EQ(row.own_bound_fraction,
                     algorithm->bytes_moved(3, row.bytes) / 1e10 / row.seconds);
  }
  // Every buffer went back to its arena.
  for (Device* d : registry.logical_devices()) EXPECT_EQ(d->memory().in_use(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllReduceBenchOnDevices,
                         ::testing::Values("reduce-to-one", "ring", "one-shot"));

TEST(AllReduceBench, MeanIsCheckedToo) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 16);
  AllReduceBenchOptions o;
  o.min_bytes = o.max_bytes = 4096;
  o.iterations = 1;
  o.op = ReduceOp::kMean;
  const auto rows = run_allreduce_sweep(registry.logical_devices(), RingAllReduce(), o, 0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].wrong, 0u);
  EXPECT_EQ(rows[0].bound_fraction, 0.0);  // no bandwidth given: no bound
  EXPECT_EQ(rows[0].own_bound_fraction, 0.0);
}

// Skips the last all-gather step's copy on rank 0: its last chunk is never updated.
class BrokenRing final : public AllReduce {
 public:
  std::string name() const override { return "broken-ring"; }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override {
    if (rank != 0) return RingAllReduce().run_rank(rank, group, op);
    const int n = group.size();
    const std::size_t count = group.count();
    group.begin(rank);
    int step = 0;
    for (int s = 0; s < n - 1; ++s, ++step) {
      const std::size_t c = static_cast<std::size_t>(((rank - 1 - s) % n + n) % n);
      group.transfer((rank + n - 1) % n, rank, c * count / n, (c + 1) * count / n,
                     TransferKind::kReduce);
      group.end_step(rank, step, "reduce-scatter");
    }
    for (int s = 0; s < n - 1; ++s, ++step) {
      const std::size_t c = static_cast<std::size_t>(((rank - s) % n + n) % n);
      if (s < n - 2) {
        group.transfer((rank + n - 1) % n, rank, c * count / n, (c + 1) * count / n,
                       TransferKind::kCopy);
      }
      group.end_step(rank, step, "all-gather");
    }
    group.finish(rank, op);
  }
  int num_steps(int n) const override { return 2 * (n - 1); }
  double bytes_moved(int, std::size_t) const override { return 0; }
};

TEST(AllReduceBench, CountsTheWrongElementsOfABrokenAlgorithm) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 16);
  AllReduceBenchOptions o;
  o.min_bytes = o.max_bytes = 3 * 100 * sizeof(float);
  o.iterations = 1;
  const auto rows = run_allreduce_sweep(registry.logical_devices(), BrokenRing(), o, 0);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].wrong, 100u);  // one chunk of 100 on rank 0
}

TEST(AllReduceBench, ASizeOverTheMemoryLimitIsAClearError) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 1);
  AllReduceBenchOptions o;
  o.min_bytes = o.max_bytes = 2 * kMiB;
  try {
    run_allreduce_sweep(registry.logical_devices(), RingAllReduce(), o, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("all-reduce benchmark buffer"), std::string::npos);
  }
}

TEST(AllReduceBench, MemoryBoundIsTheBestKernelAndGivesItsMemoryBack) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 8);
  const auto& devices = registry.logical_devices();
  const MemoryBound b = measure_memory_bound(devices, kMiB, 2);
  EXPECT_GT(b.bandwidth, 0.0);
  EXPECT_EQ(b.devices, 2u);
  for (Device* d : devices) EXPECT_EQ(d->memory().in_use(), 0u);
  EXPECT_THROW(measure_stream_bandwidth(devices, StreamKernel::kAdd, 4, 2), std::invalid_argument);
  EXPECT_THROW(measure_stream_bandwidth({}, StreamKernel::kCopy, kMiB, 2), std::invalid_argument);
}

// The peer kernels meet at the all-reduces' barrier between passes: on 2, 3 and 4 devices (more
// than this machine's cores, too) they finish, give a bandwidth, and give their memory back.
TEST(AllReduceBench, PeerKernelsFinishOnAnyNumberOfDevicesAndGiveTheirMemoryBack) {
  for (int n : {2, 3, 4}) {
    DeviceRegistry registry;
    registry.set_logical_device_configuration(n, 8);
    const auto& devices = registry.logical_devices();
    for (StreamKernel k : {StreamKernel::kCopy, StreamKernel::kAdd}) {
      for (bool one_reader : {true, false}) {
        const double b = measure_peer_bandwidth(devices, k, kMiB, 2, one_reader);
        EXPECT_TRUE(std::isfinite(b) && b > 0) << n << " devices, " << to_string(k) << ": " << b;
      }
    }
    for (Device* d : devices) EXPECT_EQ(d->memory().in_use(), 0u);
  }
  DeviceRegistry one;
  one.set_logical_device_configuration(1, 8);
  EXPECT_THROW(measure_peer_bandwidth(one.logical_devices(), StreamKernel::kCopy, kMiB, 2, false),
               std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab::vgpu
