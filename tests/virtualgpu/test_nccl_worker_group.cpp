// NCCL across processes (virtualgpu/workers/nccl_worker_group.h) on any machine: the workers are
// threads over vgpu::ThreadWorkers (as mpirun's processes would be), each with its own fake GPU,
// sharing the fakes of tests/support/cuda/fake_cuda_api.h and fake_nccl_api.h. What is checked:
// worker 0 alone makes the unique id and every worker joins with it, on its own GPU; the all-reduce
// of the NCCL device's buffer goes through NCCL on its stream and is synchronized before it is read
// (the sums, bit for bit), another device's buffer through the host; failures reach every worker as
// a sentence, never a hang; every communicator is destroyed. The real NCCL under mpirun:
// test_nccl_workers (a GPU per worker).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_nccl_api.h"
#include "tests/support/worker_threads.h"
#include "virtualgpu/devices/device_buffers.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/workers/nccl_worker_group.h"
#include "virtualgpu/workers/thread_worker_group.h"

namespace mirrorlab::testing {
namespace {

using vgpu::Device;
using vgpu::NcclWorkerGroup;

// Two workers as threads, each with one fake GPU of its own (worker w on GPU w), sharing one fake
// CUDA and one fake NCCL, as the processes of one machine share its driver.
struct TwoWorkers {
  TwoWorkers() : cuda(options()), nccl(cuda), devices(cuda, {0, 1}), workers(2) {}
  static FakeCudaApi::Options options() {
    FakeCudaApi::Options o;
    o.gpus = 2;
    return o;
  }
  Device& gpu(int w) { return *devices.devices()[static_cast<std::size_t>(w)]; }
  // Each worker's NcclWorkerGroup made (and dropped); what each threw.
  std::vector<std::string> make_groups() {
    return on_every_worker(
        2, [&](int w) { const NcclWorkerGroup group(workers.worker(w), gpu(w), nccl, nullptr); });
  }

  FakeCudaApi cuda;
  FakeNcclApi nccl;
  FakeCudaDevices devices;
  vgpu::ThreadWorkers workers;
};

int count_calls(const std::vector<std::string>& calls, const std::string& start) {
  return static_cast<int>(std::count_if(
      calls.begin(), calls.end(), [&](const std::string& c) { return c.rfind(start, 0) == 0; }));
}

// The fake's own rules for NCCL across processes must be able to fail.
TEST(FakeNcclApi, AnIdNeverMadeAndARankLeftAloneAreReported) {
  FakeCudaApi::Options options;
  options.gpus = 2;
  FakeCudaApi cuda(options);
  FakeNcclApi nccl(cuda);
  nccl.set_hang_after(std::chrono::milliseconds(50));
  EXPECT_EQ(nccl.init_rank(2, std::string(128, 'x'), 0), nullptr);
  const std::string id = nccl.unique_id();
  vgpu::NcclComm comm = nccl.init_rank(2, id, 0);
  vgpu::GpuStream stream = cuda.create_stream();
  void* block = cuda.allocate(16 * sizeof(float));
  nccl.all_reduce_sum(static_cast<float*>(block), 16, comm, stream);  // rank 1 never comes
  EXPECT_THROW(nccl.init_rank(2, "short", 1), std::invalid_argument);
  nccl.destroy(comm);
  cuda.release(block, 0);
  cuda.destroy_stream(stream);
  const std::vector<std::string> broken = nccl.violations();
  ASSERT_EQ(broken.size(), 2u);
  EXPECT_EQ(broken[0], "init_rank with an id unique_id never made");
  EXPECT_EQ(broken[1], "rank 0's all_reduce waited 50 ms for the other ranks: NCCL would hang");
}

TEST(NcclWorkerGroup, TwoWorkersSumTheirGpuBuffersThroughNcclEachOnItsOwnGpu) {
  FakeCudaApi::Options options;
  options.gpus = 2;
  FakeCudaApi cuda(options);
  FakeNcclApi nccl(cuda);
  {
    // Worker 0: devices 0 and 1 on GPU 0; worker 1: devices 2 and 3 on GPU 1.
    FakeCudaDevices devices(cuda, {0, 0, 1, 1});
    vgpu::ThreadWorkers workers(2);
    constexpr std::size_t kCount = 1000;
    std::vector<std::vector<float>> nccl_sums(2), host_sums(2);
    std::vector<std::string> transports(2);
    const std::vector<std::string> errors = on_every_worker(2, [&](int w) {
      Device& first = *devices.devices()[static_cast<std::size_t>(2 * w)];
      Device& second = *devices.devices()[static_cast<std::size_t>(2 * w + 1)];
      NcclWorkerGroup group(workers.worker(w), first, nccl, nullptr);
      transports[static_cast<std::size_t>(w)] = group.transport();
      // Small integers: any order of the sum is exact.
      std::vector<float> mine(kCount);
      for (std::size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>(i % 7 + 10 * w);
      for (Device* d : {&first, &second}) {
        vgpu::Allocation buffer = d->memory().allocate(kCount * sizeof(float), "gradients");
        const std::span<float> values(buffer.as<float>(), kCount);
        vgpu::write_buffer(*d, values, mine);
        group.all_reduce_sum(values, *d);
        std::vector<float> got(kCount);
        vgpu::read_buffer(*d, values, got);
        (d == &first ? nccl_sums : host_sums)[static_cast<std::size_t>(w)] = got;
      }
    });
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    for (int w = 0; w < 2; ++w) {
      ASSERT_EQ(nccl_sums[static_cast<std::size_t>(w)].size(), kCount) << "worker " << w;
      ASSERT_EQ(host_sums[static_cast<std::size_t>(w)].size(), kCount) << "worker " << w;
      for (std::size_t i = 0; i < kCount; ++i) {
        const float expected = static_cast<float>(2 * (i % 7) + 10);
        ASSERT_EQ(nccl_sums[static_cast<std::size_t>(w)][i], expected)
            << "worker " << w << " " << i;
        ASSERT_EQ(host_sums[static_cast<std::size_t>(w)][i], expected)
            << "worker " << w << " " << i;
      }
      EXPECT_NE(transports[static_cast<std::size_t>(w)].find("ncclAllReduce across processes"),
                std::string::npos);
    }
  }
  const std::vector<std::string> calls = nccl.calls();
  EXPECT_EQ(count_calls(calls, "unique_id"), 1);  // worker 0's, for both
  EXPECT_EQ(count_calls(calls, "init_rank 0/2 gpu0 fake-nccl-id-1"), 1);
  EXPECT_EQ(count_calls(calls, "init_rank 1/2 gpu1 fake-nccl-id-1"), 1);
  // Only the first device's buffer went through NCCL, once per worker.
  EXPECT_EQ(count_calls(calls, "all_reduce rank0 n=1000"), 1);
  EXPECT_EQ(count_calls(calls, "all_reduce rank1 n=1000"), 1);
  EXPECT_EQ(count_calls(calls, "destroy"), 2);
  EXPECT_EQ(nccl.live_comms(), 0);
  EXPECT_EQ(nccl.violations(), std::vector<std::string>{});
  EXPECT_EQ(cuda.violations(), std::vector<std::string>{});
  EXPECT_EQ(cuda.leaks(), std::vector<std::string>{});
}

TEST(NcclWorkerGroup, TheSumIsReadOnlyAfterTheStreamIsSynchronized) {
  TwoWorkers two;
  const std::vector<std::string> errors = on_every_worker(2, [&](int w) {
    Device& gpu = two.gpu(w);
    NcclWorkerGroup group(two.workers.worker(w), gpu, two.nccl, nullptr);
    vgpu::Allocation buffer = gpu.memory().allocate(64 * sizeof(float), "gradients");
    const int before = two.cuda.count("synchronize_stream");
    group.all_reduce_sum(std::span<float>(buffer.as<float>(), 64), gpu);
    if (two.cuda.count("synchronize_stream") <= before) {
      throw std::runtime_error("all_reduce_sum returned before the stream was synchronized");
    }
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(two.nccl.violations(), std::vector<std::string>{});
}

TEST(NcclWorkerGroup, AFailedUniqueIdOnWorkerZeroStopsEveryWorkerWithASentence) {
  TwoWorkers two;
  two.nccl.fail_unique_id("ncclGetUniqueId failed: unhandled system error");
  const std::vector<std::string> errors = two.make_groups();
  EXPECT_EQ(errors[0], "ncclGetUniqueId failed: unhandled system error");
  EXPECT_NE(errors[1].find("worker 0 could not make the NCCL communicator's unique id"),
            std::string::npos)
      << errors[1];
  EXPECT_EQ(count_calls(two.nccl.calls(), "init_rank"), 0);  // nobody joined with nothing
  EXPECT_EQ(two.nccl.live_comms(), 0);
}

TEST(NcclWorkerGroup, AFailedJoinIsThrownOnEveryWorkerAndLeavesNoCommunicator) {
  TwoWorkers two;
  two.nccl.fail_init("ncclCommInitRank failed: invalid usage (duplicate GPU)");
  for (const std::string& e : two.make_groups()) {
    EXPECT_EQ(e, "ncclCommInitRank failed: invalid usage (duplicate GPU)");
  }
  EXPECT_EQ(two.nccl.live_comms(), 0);
  EXPECT_EQ(two.cuda.violations(), std::vector<std::string>{});
}

TEST(NcclWorkerGroup, ACpuVirtualGpuIsRefusedNamingIt) {
  FakeCudaApi cuda;
  FakeNcclApi nccl(cuda);
  vgpu::DeviceRegistry registry;
  vgpu::ThreadWorkers workers(1);
  try {
    NcclWorkerGroup group(workers.worker(0), *registry.logical_devices().at(0), nccl, nullptr);
    FAIL() << "a CPU virtual GPU was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/gpu:0 is a CPU-backed virtual GPU"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(nccl.calls(), std::vector<std::string>{});
}

}  // namespace
}  // namespace mirrorlab::testing
