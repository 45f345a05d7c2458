// Enumeration, free memory and peer access (virtualgpu/cuda/gpu_inventory.h) against the fake CUDA
// runtime of tests/support/cuda/fake_cuda_api.h: what each GPU is asked and with which GPU current,
// the caller's current GPU put back, the peer matrix, and peers enabled only where the hardware
// allows, each from its own GPU. Left to a GPU: each CudaApi method's one runtime call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cuda/fake_cuda_api.h"
#include "virtualgpu/cuda/gpu_inventory.h"

namespace mirrorlab::testing {
namespace {

using Calls = std::vector<std::string>;

FakeCudaApi::Options gpus(int count) {
  FakeCudaApi::Options options;
  options.gpus = count;
  return options;
}

// CUDA's words for a machine with no driver at all are "driver version is insufficient", as
// for a driver too old: the reason says which it is (cudaDriverGetVersion gives 0 for none).
TEST(GpuInventory, NoGpuSaysWhyInCudasWordsAndAsksNothingMore) {
  FakeCudaApi::Options options = gpus(0);
  options.driver_version = 0;
  options.why_no_gpu = "cudaGetDeviceCount: CUDA driver version is insufficient";
  FakeCudaApi api(options);
  const vgpu::GpuInventory inventory = vgpu::enumerate_gpus(api);
  EXPECT_TRUE(inventory.gpus.empty());
  EXPECT_TRUE(inventory.peer_access.empty());
  EXPECT_EQ(inventory.unavailable_reason,
            "no CUDA GPU visible (no NVIDIA driver is installed; cudaGetDeviceCount: CUDA driver "
            "version is insufficient)");
  EXPECT_EQ(inventory.runtime_version, 13000);
  EXPECT_EQ(inventory.driver_version, 0);
  EXPECT_EQ(api.calls(), Calls{"gpu_count"});
}

TEST(GpuInventory, ADriverOlderThanTheRuntimeIsNamedWithWhatToDo) {
  FakeCudaApi::Options options = gpus(0);
  options.driver_version = 12040;
  options.why_no_gpu = "cudaGetDeviceCount: CUDA driver version is insufficient";
  FakeCudaApi old(options);
  EXPECT_EQ(vgpu::enumerate_gpus(old).unavailable_reason,
            "no CUDA GPU visible (the NVIDIA driver supports CUDA 12.4, older than this build's "
            "CUDA 13.0 runtime: install a newer driver; cudaGetDeviceCount: CUDA driver version "
            "is insufficient)");
  // A driver of the runtime's major version, older or not, runs it: CUDA's words alone.
  options.driver_version = 13000;
  options.why_no_gpu = "cudaGetDeviceCount: no CUDA-capable device is detected";
  FakeCudaApi none(options);
  EXPECT_EQ(vgpu::enumerate_gpus(none).unavailable_reason,
            "no CUDA GPU visible (cudaGetDeviceCount: no CUDA-capable device is detected)");
  options.driver_version = 12080;
  options.runtime_version = 12090;
  FakeCudaApi minor(options);
  EXPECT_EQ(vgpu::enumerate_gpus(minor).unavailable_reason,
            "no CUDA GPU visible (cudaGetDeviceCount: no CUDA-capable device is detected)");
  EXPECT_EQ(vgpu::cuda_version_text(13000), "13.0");
  EXPECT_EQ(vgpu::cuda_version_text(12090), "12.9");
}

TEST(GpuInventory, EachGpuIsAskedWithItselfCurrentAndTheCallersGpuIsPutBack) {
  FakeCudaApi api(gpus(3));
  api.set_current_gpu(2);  // the caller's
  void* taken = nullptr;
  {
    vgpu::CurrentGpu one(api, 1);
    taken = api.allocate(std::size_t{5} << 20);
  }
  const vgpu::GpuInventory inventory = vgpu::enumerate_gpus(api);
  EXPECT_EQ(api.current_gpu(), 2);
  EXPECT_TRUE(inventory.unavailable_reason.empty());
  ASSERT_EQ(inventory.gpus.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const vgpu::PhysicalGpu& gpu = inventory.gpus[static_cast<std::size_t>(i)];
    EXPECT_EQ(gpu.ordinal, i);
    EXPECT_EQ(gpu.name, "Fake GPU " + std::to_string(i));
    EXPECT_EQ(gpu.total_bytes, std::size_t{256} << 20);
    EXPECT_EQ(gpu.sm_count, 132);
    EXPECT_EQ(gpu.compute_major, 9);
    // GPU 1's free memory is less the block taken there: it was asked with GPU 1 current.
    EXPECT_EQ(gpu.free_bytes, (std::size_t{256} << 20) - (i == 1 ? std::size_t{5} << 20 : 0));
  }
  int asked = 0;
  for (const std::string& call : api.calls()) asked += call.rfind("free_bytes gpu", 0) == 0;
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(api.count("free_bytes gpu1"), 1);
  api.release(taken, 1);
  EXPECT_EQ(api.violations(), Calls{});
  EXPECT_EQ(api.leaks(), Calls{});
}

TEST(GpuInventory, ThePeerMatrixIsWhatEachPairAnswersAndNeverAsksAGpuAboutItself) {
  FakeCudaApi::Options options = gpus(3);
  options.unreachable = {{0, 2}, {2, 0}, {1, 2}};
  FakeCudaApi api(options);
  const vgpu::GpuInventory inventory = vgpu::enumerate_gpus(api);
  const std::vector<std::vector<bool>> expected{
      {false, true, false}, {true, false, false}, {false, true, false}};
  EXPECT_EQ(inventory.peer_access, expected);
  EXPECT_EQ(api.count("can_access_peer"), 6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(api.count("can_access_peer " + std::to_string(i) + " " + std::to_string(i)), 0);
  }
}

TEST(GpuInventory, AGpuThatDoesNotAnswerIsAnErrorNotAnEmptyInventory) {
  FakeCudaApi api(gpus(2));
  api.fail_next("gpu_properties");
  EXPECT_THROW(vgpu::enumerate_gpus(api), vgpu::CudaError);
}

TEST(GpuInventory, FreeBytesAsksThatGpuAndPutsTheCallersBack) {
  FakeCudaApi api(gpus(2));
  EXPECT_EQ(vgpu::gpu_free_bytes(api, 1), std::size_t{256} << 20);
  EXPECT_EQ(api.current_gpu(), 0);
  EXPECT_EQ(api.calls(), Calls{"free_bytes gpu1"});
}

TEST(PeerAccess, EnabledBothWaysFromEachGpuWhereTheHardwareAllowsItOnly) {
  FakeCudaApi::Options options = gpus(4);
  options.unreachable = {{3, 1}};  // 1 reaches 3, 3 does not reach 1
  FakeCudaApi api(options);
  api.set_current_gpu(2);
  vgpu::enable_peer_access(api, {1, 3});
  EXPECT_EQ(api.current_gpu(), 2);
  EXPECT_EQ(api.count("enable_peer_access"), 1);
  EXPECT_EQ(api.count("enable_peer_access gpu1 peer3"), 1);
  EXPECT_EQ(api.count("can_access_peer 3 1"), 1);
  EXPECT_EQ(api.violations(), Calls{});  // nothing enabled that cannot be reached

  FakeCudaApi all(gpus(3));
  vgpu::enable_peer_access(all, {0, 1, 2});
  EXPECT_EQ(all.count("enable_peer_access"), 6);
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      const std::string call =
          "enable_peer_access gpu" + std::to_string(from) + " peer" + std::to_string(to);
      EXPECT_EQ(all.count(call), from == to ? 0 : 1) << call;
    }
  }
  EXPECT_EQ(all.violations(), Calls{});
}

}  // namespace
}  // namespace mirrorlab::testing
