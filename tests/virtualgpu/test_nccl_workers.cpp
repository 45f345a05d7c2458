// NCCL across processes (virtualgpu/mpi/nccl_workers.h), run as 2 MPI ranks: worker 0's unique
// id sent over MPI, ncclCommInitRank on every worker, and the sum of one GPU buffer per
// worker. Needs a CUDA GPU per worker (NCCL before 2.30 refuses two ranks on one GPU): skipped,
// saying why, where fewer are visible (every rank sees the same GPUs, so every rank skips).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "tests/support/cuda/cuda_test_devices.h"
#include "virtualgpu/mpi/nccl_workers.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;

TEST(NcclAcrossProcesses, EveryWorkersGpuBufferHoldsTheSumOfAll) {
  if (!vgpu::nccl_across_processes_built()) GTEST_SKIP() << "this build has no NCCL";
  vgpu::MpiWorkerGroup mpi(60s, [](const vgpu::WorkerLoss& loss) {
    std::fprintf(stderr, "test_nccl_workers: %s\n", loss.sentence.c_str());
    _exit(3);
  });
  MIRRORLAB_REQUIRE_CUDA_GPUS(mpi.size());
  testing::CudaTestDevices gpus({mpi.rank()}, vgpu::DeviceKind::kCudaPhysicalGpu, 64);
  vgpu::Device& gpu = *gpus.devices()[0];
  const std::unique_ptr<vgpu::WorkerGroup> nccl = vgpu::make_nccl_worker_group(mpi, gpu);
  EXPECT_NE(nccl->transport().find("ncclAllReduce across processes"), std::string::npos);
  // Small integers: every order of addition gives the same sum, bit for bit.
  const std::size_t count = 1 << 20;
  vgpu::Allocation buffer = gpu.memory().allocate(count * sizeof(float), "test");
  const std::span<float> values(buffer.as<float>(), count);
  std::vector<float> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<float>((i % 7) + mpi.rank());
  vgpu::write_buffer(gpu, values, mine);
  nccl->all_reduce_sum(values, gpu);
  std::vector<float> got(count);
  vgpu::read_buffer(gpu, values, got);
  const int workers = mpi.size();
  for (std::size_t i = 0; i < count; i += 4099) {
    const float expected =
        static_cast<float>(workers * static_cast<int>(i % 7) + workers * (workers - 1) / 2);
    ASSERT_EQ(got[i], expected) << "element " << i;
  }
  mpi.finish();
}

}  // namespace
}  // namespace mirrorlab
