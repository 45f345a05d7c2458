// The all-reduce algorithms on CUDA memory: ring, reduce-to-one and one-shot on logical GPUs of
// one card (device copies and kernels through the CUDA transport), NCCL with one physical GPU
// per replica, the ring TensorFlow 2.21 picks on logical GPUs, the copy-kernel bandwidth and the
// benchmark sweep on CUDA devices. Every check is bit for bit against the exact sum (the inputs
// are small integers). Each test skips, saying why, when no CUDA device is visible.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/all_reduce_check.h"
#include "tests/support/cuda/cuda_test_devices.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/measure/all_reduce_bench.h"
#include "virtualgpu/measure/stream_bandwidth.h"

namespace mirrorlab::vgpu {
namespace {

// Every check: testing::check_all_reduce_exact (tests/support/all_reduce_check.h), bit for bit.

TEST(CudaAllReduce, EveryAlgorithmIsExactOnLogicalGpusOfOneCard) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  for (int n : {1, 2, 3, 4, 8}) {
    testing::CudaTestDevices cards(std::vector<int>(n, 0), DeviceKind::kCudaLogicalGpu);
    for (const char* name : {"reduce-to-one", "ring", "one-shot"}) {
      const auto algorithm = make_all_reduce(name);
      for (std::size_t count : {std::size_t{1}, std::size_t(n + 1), std::size_t(2 * n + 1),
                                (std::size_t{1} << 20) + 3}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          testing::check_all_reduce_exact(cards.devices(), *algorithm, count,
                                          std::vector<std::size_t>(n, 0), op);
        }
      }
    }
  }
#endif
}

TEST(CudaAllReduce, MisalignedBuffersAreExactOnTheVectorAndScalarPaths) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  testing::CudaTestDevices cards({0, 0, 0}, DeviceKind::kCudaLogicalGpu);
  for (const char* name : {"reduce-to-one", "ring", "one-shot"}) {
    const auto algorithm = make_all_reduce(name);
    for (std::size_t count : {std::size_t{5}, std::size_t{4099}, std::size_t{1} << 18}) {
      // Same offset everywhere: a scalar head then float4. Different offsets: scalar only.
      for (const auto& offsets :
           {std::vector<std::size_t>{1, 1, 1}, {3, 3, 3}, std::vector<std::size_t>{0, 1, 2}}) {
        testing::check_all_reduce_exact(cards.devices(), *algorithm, count, offsets,
                                        ReduceOp::kSum);
      }
    }
  }
#endif
}

#if MIRRORLAB_HAVE_CUDA
class Recorder : public StepObserver {
 public:
  void on_step(const CollectiveStep& step) override { steps.push_back(step); }
  std::vector<CollectiveStep> steps;  // on_step runs with every other rank parked
};
#endif

TEST(CudaAllReduce, TheObserverSeesTheSameStepsAsOnTheCpuWithGpuTimes) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  const int n = 4;
  testing::CudaTestDevices cards(std::vector<int>(n, 0), DeviceKind::kCudaLogicalGpu);
  std::vector<Allocation> blocks;
  std::vector<std::span<float>> buffers;
  for (Device* d : cards.devices()) {
    blocks.push_back(d->memory().allocate(4096 * sizeof(float), "t"));
    buffers.emplace_back(blocks.back().as<float>(), 4096);
  }
  for (const char* name : {"reduce-to-one", "ring", "one-shot"}) {
    const auto algorithm = make_all_reduce(name);
    Recorder recorder;
    all_reduce(cards.devices(), buffers, *algorithm, ReduceOp::kSum, &recorder);
    ASSERT_EQ(static_cast<int>(recorder.steps.size()), algorithm->num_steps(n)) << name;
    for (const CollectiveStep& step : recorder.steps) {
      EXPECT_FALSE(step.transfers.empty()) << name;
      for (const Transfer& t : step.transfers) {
        EXPECT_LE(t.start, t.finish) << name;
        EXPECT_LE(t.finish, step.finish) << name << ": a transfer cannot end after its step";
      }
    }
  }
#endif
}

TEST(CudaAllReduce, AutoOnLogicalGpusIsTensorFlowsRingAndItRuns) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  for (int n = 2; n <= 4; ++n) {
    testing::CudaTestDevices cards(std::vector<int>(n, 0), DeviceKind::kCudaLogicalGpu);
    const AllReduceChoice choice =
        choose_all_reduce("auto", placements_of(cards.devices()), nccl_runtime());
    ASSERT_EQ(choice.algorithm, "ring");
    ASSERT_EQ(choice.notes.size(), 2u);
    const auto algorithm = make_all_reduce(choice.algorithm, cards.devices());
    testing::check_all_reduce_exact(cards.devices(), *algorithm, 100003,
                                    std::vector<std::size_t>(n, 0), ReduceOp::kSum);
  }
#endif
}

TEST(CudaAllReduce, NcclWithOnePhysicalGpuPerReplica) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if !MIRRORLAB_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#elif MIRRORLAB_HAVE_CUDA
  std::string reason;
  std::vector<int> ordinals;
  for (int i = 0; i < visible_cuda_gpus(&reason); ++i) ordinals.push_back(i);  // N = 1 on one GPU
  testing::CudaTestDevices cards(ordinals, DeviceKind::kCudaPhysicalGpu);
  const AllReduceChoice choice =
      choose_all_reduce("auto", placements_of(cards.devices()), nccl_runtime());
  ASSERT_EQ(choice.algorithm, "nccl");
  const auto nccl = make_all_reduce(choice.algorithm, cards.devices());
  for (std::size_t count : {std::size_t{1}, std::size_t{4099}, std::size_t{1} << 20}) {
    testing::check_all_reduce_exact(cards.devices(), *nccl, count,
                                    std::vector<std::size_t>(ordinals.size(), 0), ReduceOp::kSum);
    testing::check_all_reduce_exact(cards.devices(), *nccl, count,
                                    std::vector<std::size_t>(ordinals.size(), 1), ReduceOp::kMean);
  }
  Recorder recorder;  // one opaque step
  std::vector<Allocation> blocks;
  std::vector<std::span<float>> buffers;
  for (Device* d : cards.devices()) {
    blocks.push_back(d->memory().allocate(64 * sizeof(float), "t"));
    buffers.emplace_back(blocks.back().as<float>(), 64);
  }
  all_reduce(cards.devices(), buffers, *nccl, ReduceOp::kSum, &recorder);
  ASSERT_EQ(recorder.steps.size(), 1u);
  EXPECT_TRUE(recorder.steps[0].transfers.empty());
  EXPECT_EQ(recorder.steps[0].algorithm, "nccl");
#endif
}

TEST(CudaAllReduce, NcclOnTwoLogicalGpusOfOneCardIsRefusedBefore230OrExperimental) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if !MIRRORLAB_HAVE_NCCL
  GTEST_SKIP() << "this build has no NCCL";
#elif MIRRORLAB_HAVE_CUDA
  testing::CudaTestDevices cards({0, 0}, DeviceKind::kCudaLogicalGpu);
  if (nccl_runtime().version_code < kNcclMultiRankGpuVersion) {
    try {
      make_all_reduce("nccl", cards.devices());
      FAIL() << "NCCL " << nccl_version_text(nccl_runtime().version_code) << " must be refused";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("Duplicate GPU detected"), std::string::npos);
    }
  } else {
    const auto nccl = make_all_reduce("nccl", cards.devices());  // experimental multi-rank
    testing::check_all_reduce_exact(cards.devices(), *nccl, 4099, {0, 0}, ReduceOp::kSum);
  }
#endif
}

TEST(CudaCopyBandwidth, TheCopyKernelMeasuresAPositiveBandwidthAndGivesItsMemoryBack) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  testing::CudaTestDevices cards({0, 0}, DeviceKind::kCudaLogicalGpu);
  EXPECT_GT(measure_stream_bandwidth(cards.devices(), StreamKernel::kCopy, 16 * kMiB, 3), 0.0);
  EXPECT_GT(measure_stream_bandwidth(cards.devices(), StreamKernel::kAdd, 16 * kMiB, 3), 0.0);
  for (Device* d : cards.devices()) EXPECT_EQ(d->memory().in_use(), 0u);
#endif
}

TEST(CudaAllReduceBench, TheSweepOnCudaDevicesIsExactForEveryAlgorithm) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
#if MIRRORLAB_HAVE_CUDA
  testing::CudaTestDevices cards({0, 0, 0}, DeviceKind::kCudaLogicalGpu);
  AllReduceBenchOptions o;
  o.min_bytes = 4;
  o.max_bytes = 1 << 20;
  o.step_factor = 16;
  o.iterations = 2;
  o.warmup_iterations = 1;
  for (const char* name : {"reduce-to-one", "ring", "one-shot"}) {
    const auto rows = run_allreduce_sweep(cards.devices(), *make_all_reduce(name), o, 1e11);
    ASSERT_EQ(rows.size(), sweep_sizes(o).size());
    for (const AllReduceBenchRow& row : rows) EXPECT_EQ(row.wrong, 0u) << name << " " << row.bytes;
  }
#endif
}

}  // namespace
}  // namespace mirrorlab::vgpu
