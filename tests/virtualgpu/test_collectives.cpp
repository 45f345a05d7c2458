// All-reduce algorithms: exact sums for every N and awkward counts, the steps the observer sees
// (and that they are what the timing model's schedule says each moves), and errors that release
// every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/support/hang_guard.h"
#include "timing/schedule.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/collectives/collective_replay.h"
#include "virtualgpu/collectives/one_shot_all_reduce.h"
#include "virtualgpu/collectives/reduce_to_one.h"
#include "virtualgpu/collectives/ring_all_reduce.h"
#include "virtualgpu/collectives/transport.h"
#include "virtualgpu/devices/device_buffers.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::vgpu {
namespace {

// Records every step it is handed.
class RecordingObserver : public StepObserver {
 public:
  void on_step(const CollectiveStep& step) override {
    std::lock_guard lock(mutex);
    steps.push_back(step);
  }
  std::mutex mutex;
  std::vector<CollectiveStep> steps;
};

// Small integers: every partial sum is an integer below 2^24, so float addition is exact in any
// order and the expected result is exact too.
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (1 + i % 7)); }
float expected_sum(int n, std::size_t i) {
  return static_cast<float>(n * (n + 1) / 2 * (1 + i % 7));
}

std::vector<std::size_t> counts_for(int n) {
  return {0, 1, static_cast<std::size_t>(n - 1), static_cast<std::size_t>(2 * n + 1),
          (std::size_t{1} << 20) + 3};
}

void check_all_reduce(const std::string& algorithm, ReduceOp op) {
  for (int n = 1; n <= 8; ++n) {
    DeviceRegistry registry;
    registry.set_logical_device_configuration(n, 64);
    const auto& devices = registry.logical_devices();
    for (std::size_t count : counts_for(n)) {
      SCOPED_TRACE(algorithm + " n=" + std::to_string(n) + " count=" + std::to_string(count));
      std::vector<std::vector<float>> data(n, std::vector<float>(count));
      std::vector<std::span<float>> buffers;
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < count; ++i) data[r][i] = value(r, i);
        buffers.emplace_back(data[r]);
      }
      auto algo = make_all_reduce(algorithm);
      RecordingObserver observer;
      all_reduce(devices, buffers, *algo, op, &observer);
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          const float sum = expected_sum(n, i);
          if (op == ReduceOp::kSum) {
            ASSERT_EQ(data[r][i], sum) << "rank " << r << " element " << i;
          } else {
            ASSERT_FLOAT_EQ(data[r][i], sum / static_cast<float>(n))
                << "rank " << r << " element " << i;
          }
        }
      }
      ASSERT_EQ(static_cast<int>(observer.steps.size()), algo->num_steps(n));
      for (std::size_t s = 0; s < observer.steps.size(); ++s) {
        EXPECT_EQ(observer.steps[s].index, static_cast<int>(s));
        EXPECT_EQ(observer.steps[s].algorithm, algorithm);
        EXPECT_LE(observer.steps[s].start, observer.steps[s].finish);
      }
    }
  }
}

TEST(AllReduce, RingSumIsExact) { check_all_reduce("ring", ReduceOp::kSum); }
TEST(AllReduce, RingMean) { check_all_reduce("ring", ReduceOp::kMean); }
TEST(AllReduce, ReduceToOneSumIsExact) { check_all_reduce("reduce-to-one", ReduceOp::kSum); }
TEST(AllReduce, ReduceToOneMean) { check_all_reduce("reduce-to-one", ReduceOp::kMean); }
TEST(AllReduce, OneShotSumIsExact) { check_all_reduce("one-shot", ReduceOp::kSum); }
TEST(AllReduce, OneShotMean) { check_all_reduce("one-shot", ReduceOp::kMean); }

// Values whose sums round: the one-shot must add in rank order, as reduce-to-one into /gpu:0
// does, so both give the same bits, and every replica the same bits.
TEST(AllReduce, OneShotAddsInRankOrderLikeReduceToOne) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(5, 64);
  const std::size_t count = 4099;
  std::vector<std::vector<float>> a(5, std::vector<float>(count)), b;
  for (int r = 0; r < 5; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      a[r][i] = 1.0f / static_cast<float>(3 + r + i % 11) * (r % 2 ? 1e4f : 1e-3f);
    }
  }
  b = a;
  std::vector<std::span<float>> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  all_reduce(registry.logical_devices(), sa, OneShotAllReduce(), ReduceOp::kSum);
  all_reduce(registry.logical_devices(), sb, ReduceToOneDevice(0), ReduceOp::kSum);
  for (int r = 0; r < 5; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(a[r][i], b[0][i]) << "rank " << r << " element " << i;
    }
  }
}

// Sums n buffers of `count` ones with `algorithm` on n devices; the steps the observer saw.
std::vector<CollectiveStep> observe(const AllReduce& algorithm, int n, std::size_t count,
                                    std::vector<std::vector<float>>& data) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(n, 64);
  data.assign(n, std::vector<float>(count, 1.0f));
  std::vector<std::span<float>> buffers(data.begin(), data.end());
  RecordingObserver observer;
  all_reduce(registry.logical_devices(), buffers, algorithm, ReduceOp::kSum, &observer);
  return observer.steps;
}

TEST(AllReduce, OneShotIsOneStepReadingAndWritingEverySliceOfEveryBuffer) {
  for (int n = 2; n <= 6; ++n) {
    const std::size_t count = 10 * n + 3;
    std::vector<std::vector<float>> data;
    const std::vector<CollectiveStep> steps = observe(OneShotAllReduce(), n, count, data);
    ASSERT_EQ(steps.size(), 1u) << "n=" << n;
    const CollectiveStep& step = steps[0];
    EXPECT_EQ(step.phase, "reduce-broadcast");
    EXPECT_EQ(step.algorithm, "one-shot");
    // Per slice r (rank r's work): every buffer's slice r receives every other buffer's.
    ASSERT_EQ(step.transfers.size(), static_cast<std::size_t>(n * n * (n - 1)));
    std::vector<std::vector<int>> pairs(n * n, std::vector<int>(n, 0));  // [src*n+dst][slice]
    for (const Transfer& t : step.transfers) {
      EXPECT_NE(t.src, t.dst);
      EXPECT_EQ(t.kind, TransferKind::kReduce);
      int slice = -1;
      for (int r = 0; r < n; ++r) {
        if (t.begin == r * count / n && t.end == (r + 1) * count / n) slice = r;
      }
      ASSERT_GE(slice, 0) << "a transfer that is not one rank's slice: " << t.begin << ".."
                          << t.end;
      EXPECT_EQ(t.bytes, (t.end - t.begin) * sizeof(float));
      ++pairs[t.src * n + t.dst][slice];
    }
    for (int s = 0; s < n; ++s) {
      for (int d = 0; d < n; ++d) {
        for (int r = 0; r < n; ++r) EXPECT_EQ(pairs[s * n + d][r], s == d ? 0 : 1);
      }
    }
    // Replayed like any step (sources read as before the step): every rank holds every share.
    const auto held = replay_contributions(n, count, steps);
    for (int r = 0; r < n; ++r) {
      for (const ChunkContributors& c : held[r]) {
        EXPECT_EQ(c.contributors, (1ull << n) - 1) << "rank " << r << " at " << c.begin;
      }
    }
    for (const auto& d : data) {
      for (float v : d) ASSERT_EQ(v, static_cast<float>(n));
    }
  }
}

// The CUDA transport collects the ranks' one-shot slices in arrival order and runs them as one
// kernel over the range they tile. With fewer elements than ranks some slices are empty and
// share their begin with a full one; every arrival order must still tile.
TEST(AllReduce, OneShotSlicesTileInAnyArrivalOrderEvenWhenSomeAreEmpty) {
  for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{9}}) {
    const int n = 4;
    std::vector<OneShotSlice> slices;
    for (int r = 0; r < n; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      slices.push_back({r, ru * count / n, (ru + 1) * count / n});
    }
    std::sort(slices.begin(), slices.end(),
              [](const OneShotSlice& a, const OneShotSlice& b) { return a.rank < b.rank; });
    do {
      std::vector<OneShotSlice> arrived = slices;
      ASSERT_NO_THROW(order_one_shot_slices(arrived)) << "count " << count;
      EXPECT_EQ(arrived.front().begin, 0u);
      EXPECT_EQ(arrived.back().end, count);
    } while (std::next_permutation(
        slices.begin(), slices.end(),
        [](const OneShotSlice& a, const OneShotSlice& b) { return a.rank < b.rank; }));
  }
  std::vector<OneShotSlice> gap{{0, 0, 2}, {1, 3, 4}};
  EXPECT_THROW(order_one_shot_slices(gap), std::logic_error);
  std::vector<OneShotSlice> overlap{{0, 0, 3}, {1, 2, 4}};
  EXPECT_THROW(order_one_shot_slices(overlap), std::logic_error);
}

TEST(AllReduce, RingObserverSeesTwoNMinusOneStepsOfOneChunkPerRank) {
  for (int n = 2; n <= 8; ++n) {
    const std::size_t count = 10 * n + 3;
    std::vector<std::vector<float>> data;
    const std::vector<CollectiveStep> steps = observe(RingAllReduce(), n, count, data);
    ASSERT_EQ(steps.size(), static_cast<std::size_t>(2 * (n - 1))) << "n=" << n;
    for (int s = 0; s < 2 * (n - 1); ++s) {
      const CollectiveStep& step = steps[s];
      EXPECT_EQ(step.phase, s < n - 1 ? "reduce-scatter" : "all-gather");
      ASSERT_EQ(step.transfers.size(), static_cast<std::size_t>(n));
      std::size_t covered = 0;
      for (int r = 0; r < n; ++r) {
        const Transfer& t = step.transfers[r];  // sorted by destination
        EXPECT_EQ(t.dst, r);
        EXPECT_EQ(t.src, (r + n - 1) % n);
        EXPECT_EQ(t.kind, s < n - 1 ? TransferKind::kReduce : TransferKind::kCopy);
        EXPECT_EQ(t.bytes, (t.end - t.begin) * sizeof(float));
        EXPECT_LE(t.start, t.finish);
        covered += t.end - t.begin;
      }
      EXPECT_EQ(covered, count);  // one chunk per rank, every chunk once
    }
    for (const auto& d : data) {
      for (float v : d) ASSERT_EQ(v, static_cast<float>(n));
    }
  }
}

TEST(AllReduce, ReduceToOneReducesIntoTheChosenDestinationThenBroadcasts) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(4, 64);
  std::vector<std::vector<float>> data(4, std::vector<float>(5));
  for (int r = 0; r < 4; ++r) data[r].assign(5, static_cast<float>(r + 1));
  std::vector<std::span<float>> buffers(data.begin(), data.end());
  RecordingObserver observer;
  ReduceToOneDevice algo(2);
  all_reduce(registry.logical_devices(), buffers, algo, ReduceOp::kSum, &observer);
  ASSERT_EQ(observer.steps.size(), 2u);
  EXPECT_EQ(observer.steps[0].phase, "reduce");
  EXPECT_EQ(observer.steps[1].phase, "broadcast");
  ASSERT_EQ(observer.steps[0].transfers.size(), 3u);
  for (const Transfer& t : observer.steps[0].transfers) {
    EXPECT_EQ(t.dst, 2);
    EXPECT_NE(t.src, 2);
    EXPECT_EQ(t.kind, TransferKind::kReduce);
    EXPECT_EQ(t.bytes, 5 * sizeof(float));
  }
  ASSERT_EQ(observer.steps[1].transfers.size(), 3u);
  for (const Transfer& t : observer.steps[1].transfers) {
    EXPECT_EQ(t.src, 2);
    EXPECT_NE(t.dst, 2);
    EXPECT_EQ(t.kind, TransferKind::kCopy);
  }
  for (const auto& d : data) {
    for (float v : d) EXPECT_EQ(v, 10.0f);
  }
}

TEST(AllReduce, TrafficModelAndStepCounts) {
  EXPECT_EQ(RingAllReduce().num_steps(1), 0);
  EXPECT_EQ(RingAllReduce().num_steps(8), 14);
  EXPECT_EQ(ReduceToOneDevice().num_steps(1), 0);
  EXPECT_EQ(ReduceToOneDevice().num_steps(8), 2);
  EXPECT_DOUBLE_EQ(RingAllReduce().bytes_moved(4, 100), 5.0 * 3 * 100);
  EXPECT_DOUBLE_EQ(ReduceToOneDevice().bytes_moved(4, 100), 5.0 * 3 * 100);
  EXPECT_DOUBLE_EQ(RingAllReduce().bytes_moved(1, 100), 0.0);
  EXPECT_EQ(OneShotAllReduce().num_steps(1), 0);
  EXPECT_EQ(OneShotAllReduce().num_steps(8), 1);
  EXPECT_DOUBLE_EQ(OneShotAllReduce().bytes_moved(4, 100), 2.0 * 4 * 100);  // the bound
  EXPECT_DOUBLE_EQ(OneShotAllReduce().bytes_moved(1, 100), 0.0);
}

TEST(AllReduce, UnknownNamesAndBadDestinationsAreClearErrors) {
  try {
    make_all_reduce("tree");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("choose reduce-to-one, ring, one-shot or nccl"),
              std::string::npos)
        << e.what();
  }
  // NCCL is made over devices; without them the factory says so.
  EXPECT_THROW(make_all_reduce("nccl"), std::invalid_argument);
  EXPECT_THROW(make_all_reduce("reduce-to-one", -1), std::invalid_argument);

  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 64);
  std::vector<float> a(3, 1.0f), b(3, 2.0f);
  ReduceToOneDevice far(5);
  try {
    all_reduce(registry.logical_devices(), {a, b}, far, ReduceOp::kSum);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/gpu:5"), std::string::npos) << e.what();
  }
  std::vector<float> c(4);
  EXPECT_THROW(all_reduce(registry.logical_devices(), {a, c}, RingAllReduce(), ReduceOp::kSum),
               std::invalid_argument);
  EXPECT_THROW(all_reduce(registry.logical_devices(), {a}, RingAllReduce(), ReduceOp::kSum),
               std::invalid_argument);
}

// Stands for CUDA device memory on a machine without a GPU: host blocks the host must not touch.
class PretendDeviceAllocator final : public BlockAllocator {
 public:
  void* allocate(std::size_t bytes) override { return host_->allocate(bytes); }
  void release(void* ptr, std::size_t bytes) noexcept override { host_->release(ptr, bytes); }
  bool host_accessible() const override { return false; }

 private:
  std::unique_ptr<BlockAllocator> host_ = make_host_allocator();
};

// With the process's CUDA runtime where the build has one (it fails at its first call without a
// GPU), none otherwise.
std::unique_ptr<Device> pretend_cuda_device(int index) {
  return std::make_unique<Device>(index, DeviceKind::kCudaLogicalGpu, kMiB,
                                  std::make_unique<PretendDeviceAllocator>(), /*ordinal=*/0,
                                  /*stream=*/nullptr, cuda_built() ? &process_cuda_api() : nullptr);
}

TEST(AllReduce, BuffersOfCpuAndCudaDevicesTogetherAreAClearError) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 64);
  const auto cuda = pretend_cuda_device(1);
  std::vector<float> a(3, 1.0f), b(3, 2.0f);
  try {
    all_reduce({registry.logical_devices()[0], cuda.get()}, {a, b}, RingAllReduce(),
               ReduceOp::kSum);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot mix"), std::string::npos) << e.what();
  }
}

// CUDA memory goes through the CUDA transport. Without a GPU (or without CUDA in the build) the
// first CUDA call fails: every rank must be released and the error must name what failed.
TEST(AllReduce, CudaBuffersWithoutAGpuFailWithTheCudaErrorAndReleaseEveryRank) {
  std::string reason;
  if (visible_cuda_gpus(&reason) > 0) {
    GTEST_SKIP() << "a CUDA device is visible: test_cuda_collectives runs this path for real";
  }
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> devices;
  std::vector<Allocation> blocks;
  std::vector<std::span<float>> buffers;
  for (int i = 0; i < 3; ++i) {
    owned.push_back(pretend_cuda_device(i));
    devices.push_back(owned.back().get());
    blocks.push_back(devices.back()->memory().allocate(64, "buffer"));
    buffers.emplace_back(blocks.back().as<float>(), 16);
  }
  for (const char* algorithm : {"ring", "reduce-to-one", "one-shot"}) {
    SCOPED_TRACE(algorithm);
    try {
      all_reduce(devices, buffers, *make_all_reduce(algorithm), ReduceOp::kSum);
      FAIL() << "expected the CUDA error";
    } catch (const CollectiveAborted&) {
      FAIL() << "got CollectiveAborted instead of the CUDA error";
    } catch (const std::exception& e) {
      const std::string what = e.what();
#if MIRRORLAB_HAVE_CUDA
      EXPECT_NE(what.find("failed at"), std::string::npos) << what;
      EXPECT_NE(what.find("cudaGetDevice"), std::string::npos) << what;  // the first call made
#else
      EXPECT_NE(what.find("this build has no CUDA"), std::string::npos) << what;
#endif
    }
  }
}

// A rank that fails half-way must release the others, and the host must see the real error.
class FailingAllReduce final : public AllReduce {
 public:
  std::string name() const override { return "failing"; }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override {
    group.begin(rank);
    if (rank == 1) throw std::runtime_error("rank 1 ran out of something");
    group.end_step(rank, 0, "never");
    group.finish(rank, op);
  }
  int num_steps(int) const override { return 1; }
  double bytes_moved(int, std::size_t) const override { return 0; }
};

TEST(AllReduce, AFailingRankReleasesTheOthersAndItsErrorIsReported) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(4, 64);
  std::vector<std::vector<float>> data(4, std::vector<float>(8, 1.0f));
  std::vector<std::span<float>> buffers(data.begin(), data.end());
  try {
    all_reduce(registry.logical_devices(), buffers, FailingAllReduce(), ReduceOp::kSum);
    FAIL() << "expected the failing rank's error";
  } catch (const CollectiveAborted&) {
    FAIL() << "got CollectiveAborted instead of the real error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 1 ran out of something");
  }
  // The devices are still usable afterwards.
  all_reduce(registry.logical_devices(), buffers, RingAllReduce(), ReduceOp::kSum);
  EXPECT_EQ(data[3][0], 4.0f);
}

// Fails rank `rank` as it ends step `index` of the all-reduce, as a device failing in the middle
// of it does.
class FailingRankObserver : public StepObserver {
 public:
  FailingRankObserver(int rank, int index) : rank_(rank), index_(index) {}
  void on_step(const CollectiveStep&) override {}
  void on_rank_step(int rank, int index, std::string_view) override {
    if (rank == rank_ && index == index_) throw std::runtime_error("rank failed");
  }

 private:
  int rank_, index_;
};

// Every algorithm on 2 to 8 ranks, each rank failing at each of its steps: the failure is what
// all_reduce() reports, every rank is released (the call returns), and the devices still work.
// Guarded: a hang ends the program with the case that hung.
TEST(AllReduce, ARankFailingAtAnyStepNeverHangsAnyAlgorithm) {
  int cases = 0;
  for (const std::string algorithm : {"reduce-to-one", "ring", "one-shot"}) {
    const std::unique_ptr<AllReduce> all_reduce = make_all_reduce(algorithm);
    for (int n = 2; n <= 8; ++n) {
      DeviceRegistry registry;
      registry.set_logical_device_configuration(n, 16);
      std::vector<std::vector<float>> data(static_cast<std::size_t>(n), std::vector<float>(13, 1));
      for (int index = 0; index < all_reduce->num_steps(n); ++index) {
        for (int rank = 0; rank < n; ++rank) {
          const std::string what = algorithm + " on " + std::to_string(n) + ", rank " +
                                   std::to_string(rank) + " failing at step " +
                                   std::to_string(index);
          FailingRankObserver observer(rank, index);
          std::vector<std::span<float>> buffers(data.begin(), data.end());
          mirrorlab::testing::within_seconds(30, what, [&] {
            try {
              vgpu::all_reduce(registry.logical_devices(), buffers, *all_reduce, ReduceOp::kSum,
                               &observer);
              ADD_FAILURE() << what << ": no failure";
            } catch (const CollectiveAborted&) {
              ADD_FAILURE() << what << ": the abort hid the failure";
            } catch (const std::runtime_error& e) {
              EXPECT_STREQ(e.what(), "rank failed") << what;
            }
          });
          ++cases;
        }
      }
      for (auto& d : data) std::fill(d.begin(), d.end(), 1.0f);
      std::vector<std::span<float>> buffers(data.begin(), data.end());
      vgpu::all_reduce(registry.logical_devices(), buffers, *all_reduce, ReduceOp::kSum);
      EXPECT_EQ(data.back()[12], static_cast<float>(n)) << algorithm << " on " << n;
    }
  }
  // n ranks x steps, over n = 2..8: reduce-to-one 2n (70), one-shot n (35), ring 2(n-1)n (336).
  EXPECT_EQ(cases, 70 + 35 + 336);
}

TEST(CancellableBarrier, ReleasesWaitersOnAbort) {
  CancellableBarrier barrier(3);
  std::vector<std::thread> threads;
  std::atomic<int> aborted{0};
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      try {
        barrier.arrive_and_wait();
      } catch (const CollectiveAborted&) {
        aborted.fetch_add(1);
      }
    });
  }
  // Whether they are already waiting or arrive after the abort, both must be released.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  barrier.abort();
  for (auto& t : threads) t.join();
  EXPECT_EQ(aborted.load(), 2);
  EXPECT_TRUE(barrier.aborted());
  EXPECT_THROW(barrier.arrive_and_wait(), CollectiveAborted);
}

TEST(CancellableBarrier, CompletionRunsOncePerGenerationBeforeRelease) {
  constexpr int kParties = 4, kRounds = 200;
  CancellableBarrier barrier(kParties);
  std::atomic<int> completions{0};
  std::vector<int> seen(kParties * kRounds);
  std::vector<std::thread> threads;
  for (int p = 0; p < kParties; ++p) {
    threads.emplace_back([&, p] {
      for (int r = 0; r < kRounds; ++r) {
        barrier.arrive_and_wait([&] { ++completions; });
        seen[r * kParties + p] = completions;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRounds; ++r) {
    for (int p = 0; p < kParties; ++p) EXPECT_GE(seen[r * kParties + p], r + 1);
  }
  EXPECT_EQ(completions, kRounds);
}

// The timing model prices what its schedule of an algorithm moves: it must be what the algorithm
// really moves, step by step (source, destination, bytes, and whether the bytes are reduced).
TEST(AllReduce, MovesWhatItsScheduleInTheTimingModelSays) {
  for (const char* name : {"reduce-to-one", "ring"}) {
    for (int n : {2, 3, 4}) {
      const std::size_t count = 1200;  // divisible by 2, 3, 4: whole chunks
      std::vector<std::vector<float>> data(n, std::vector<float>(count, 1.0f));
      std::vector<std::span<float>> buffers(data.begin(), data.end());
      DeviceRegistry registry;
      registry.set_logical_device_configuration(n, 64);
      RecordingObserver recorder;
      all_reduce(registry.logical_devices(), buffers, *make_all_reduce(name), ReduceOp::kSum,
                 &recorder);
      const timing::Schedule s = find_all_reduce(name)->schedule(n, count * sizeof(float), 0);
      ASSERT_EQ(recorder.steps.size(), s.steps.size()) << name << " on " << n;
      for (std::size_t k = 0; k < s.steps.size(); ++k) {
        EXPECT_EQ(recorder.steps[k].phase, s.steps[k].phase);
        std::multiset<std::tuple<int, int, double, bool>> real, model;
        for (const Transfer& t : recorder.steps[k].transfers) {
          real.insert(
              {t.src, t.dst, static_cast<double>(t.bytes), t.kind == TransferKind::kReduce});
        }
        for (const timing::Move& m : s.steps[k].moves) {
          model.insert({m.from, m.to, m.bytes, m.work == timing::Work::kReduce});
        }
        EXPECT_EQ(real, model) << name << " on " << n << " ranks, step " << k;
      }
    }
  }
}

}  // namespace
}  // namespace mirrorlab::vgpu
