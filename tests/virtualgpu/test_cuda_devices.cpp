// CUDA devices on a real GPU: enumeration, capped cudaMalloc arenas, the devices' own streams,
// kernels of two logical GPUs on the card at once, SM partitions (green contexts) and events.
// Registered in every CUDA build; where no GPU is visible each test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cuda/cuda_test_devices.h"
#include "tests/support/cuda/cuda_test_kernels.h"
#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/gpu_configuration.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::vgpu {
namespace {

const GpuInventory& visible_gpus() {
  static const GpuInventory inventory = enumerate_gpus();
  return inventory;
}

template <class T>
std::vector<T> copy_to_host(const void* device_ptr, std::size_t count) {
  std::vector<T> host(count);
  MIRRORLAB_CUDA_CHECK(
      cudaMemcpy(host.data(), device_ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// Needs no GPU: the check throws with the call, file:line and CUDA's words.
TEST(CudaCheck, ThrowsWithTheCallTheLineAndCudasWords) {
  try {
    MIRRORLAB_CUDA_CHECK(cudaSetDevice(4096));
    FAIL() << "cudaSetDevice(4096) succeeded";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice(4096) failed at "), std::string::npos) << what;
    EXPECT_NE(what.find("test_cuda_devices.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("(cudaError"), std::string::npos) << what;
    EXPECT_NE(e.code(), 0);
  }
  // Without a driver every call answers "insufficient driver"; with one, the error is cleared.
  if (!visible_gpus().gpus.empty()) {
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed call's error was left behind";
  }
}

TEST(CudaDevices, EnumerationMatchesWhatCudaReports) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  const GpuInventory& inventory = visible_gpus();
  int count = 0;
  MIRRORLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  ASSERT_EQ(static_cast<int>(inventory.gpus.size()), count);
  ASSERT_EQ(inventory.peer_access.size(), inventory.gpus.size());
  for (const PhysicalGpu& gpu : inventory.gpus) {
    cudaDeviceProp prop{};
    MIRRORLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu.ordinal));
    EXPECT_EQ(gpu.name, prop.name);
    EXPECT_EQ(gpu.sm_count, prop.multiProcessorCount);
    EXPECT_EQ(gpu.total_bytes, prop.totalGlobalMem);
    EXPECT_GT(gpu.free_bytes, 0u);
    EXPECT_LE(gpu.free_bytes, gpu.total_bytes);
    EXPECT_FALSE(inventory.peer_access[gpu.ordinal][gpu.ordinal]);
  }
  EXPECT_GT(inventory.driver_version, 0);
}

TEST(CudaDevices, LogicalGpusHaveExactlyCappedDeviceMemory) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{64}, {32}});
  const std::vector<Device*>& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->kind(), DeviceKind::kCudaLogicalGpu);
  EXPECT_TRUE(devices[1]->is_cuda());
  EXPECT_EQ(devices[1]->cuda_ordinal(), 0);
  MemoryArena& arena = devices[0]->memory();
  EXPECT_FALSE(arena.host_accessible());
  EXPECT_EQ(arena.limit(), 64 * kMiB);

  // Up to the limit to the byte, then one byte more is the CPU's out-of-memory error.
  Allocation most = arena.allocate(64 * kMiB - 1, "most");
  Allocation last = arena.allocate(1, "the last byte");
  EXPECT_EQ(arena.in_use(), 64 * kMiB);
  try {
    arena.allocate(1, "one byte too many");
    FAIL() << "allocated past the cap";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("/gpu:0: out of memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(arena.in_use(), 64 * kMiB);
  EXPECT_EQ(arena.peak(), 64 * kMiB);
  EXPECT_EQ(devices[1]->memory().in_use(), 0u) << "each logical GPU has its own arena";

  cudaPointerAttributes attributes{};
  MIRRORLAB_CUDA_CHECK(cudaPointerGetAttributes(&attributes, most.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(most.data()) % 64, 0u);
  most.reset();
  last.reset();
  EXPECT_EQ(arena.in_use(), 0u);
}

TEST(CudaDevices, BlocksAreZeroEvenWhenTheMemoryWasUsedBefore) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{16}});
  MemoryArena& arena = registry.logical_devices()[0]->memory();
  const std::size_t count = (4 * kMiB) / sizeof(int);
  for (int round = 0; round < 3; ++round) {
    Allocation block = arena.allocate(count * sizeof(int), "block");
    const std::vector<int> host = copy_to_host<int>(block.data(), count);
    ASSERT_TRUE(std::all_of(host.begin(), host.end(), [](int v) { return v == 0; }))
        << "round " << round;
    MIRRORLAB_CUDA_CHECK(cudaMemset(block.data(), 0x5a, count * sizeof(int)));
    MIRRORLAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

TEST(CudaDevices, EachDeviceHasItsOwnNonBlockingStreamAndItsThreadIsOnItsGpu) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{16}, {16}, {16}});
  const std::vector<Device*>& devices = registry.logical_devices();
  std::set<void*> streams;
  for (Device* d : devices) {
    ASSERT_NE(d->cuda_stream(), nullptr);
    streams.insert(d->cuda_stream());
    unsigned flags = 0;
    MIRRORLAB_CUDA_CHECK(cudaStreamGetFlags(static_cast<cudaStream_t>(d->cuda_stream()), &flags));
    EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
    int current = -1;
    d->stream().enqueue([&current] { MIRRORLAB_CUDA_CHECK(cudaGetDevice(&current)); });
    d->stream().synchronize();
    EXPECT_EQ(current, 0);
  }
  EXPECT_EQ(streams.size(), devices.size());
  EXPECT_NE(registry.description().find("1 Physical GPU, 3 Logical GPUs (logical GPUs on GPU:0 "),
            std::string::npos)
      << registry.description();
  EXPECT_NE(registry.sm_note().find("share all"), std::string::npos) << registry.sm_note();
}

// Two logical GPUs' kernels, launched from their own device threads, are on the card at the
// same time: each sees the flag the other raised. (Excluded under compute-sanitizer, which
// runs kernels one at a time.)
TEST(CudaDevicesConcurrent, KernelsOfTwoLogicalGpusRunAtTheSameTime) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{16}, {16}});
  const std::vector<Device*>& devices = registry.logical_devices();
  Allocation shared = devices[0]->memory().allocate(4 * sizeof(int), "flags and answers");
  int* flags = shared.as<int>();
  int* saw = flags + 2;
  const long long two_seconds = 2'000'000'000LL * 2;  // clock cycles, at about 2 GHz
  for (int which = 0; which < 2; ++which) {
    Device* d = devices[which];
    d->stream().enqueue([=] {
      testing::launch_handshake(d->cuda_stream(), flags, which, saw + which, two_seconds);
    });
  }
  for (Device* d : devices) {
    d->stream().synchronize();
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(d->cuda_stream())));
  }
  const std::vector<int> seen = copy_to_host<int>(saw, 2);
  EXPECT_EQ(seen[0], 1) << "/gpu:0's kernel never saw /gpu:1's: they did not overlap";
  EXPECT_EQ(seen[1], 1) << "/gpu:1's kernel never saw /gpu:0's: they did not overlap";
}

// With --sm-split each logical GPU's kernels stay on its own SMs.
TEST(CudaDevices, SmSplitKeepsEachLogicalGpuOnItsOwnSms) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{16}, {16}}, true);
  const std::vector<Device*>& devices = registry.logical_devices();
  if (registry.sm_note().find("not available") != std::string::npos) {
    GTEST_SKIP() << registry.sm_note();
  }
  EXPECT_NE(registry.sm_note().find("(CUDA green contexts)"), std::string::npos)
      << registry.sm_note();
  const int card_sms = visible_gpus().gpus[0].sm_count;
  const int blocks = 4 * card_sms;
  const long long spin = 200'000;  // ~0.1 ms per block: long enough to spread over the SMs
  for (Device* d : devices) {
    Allocation ids = d->memory().allocate(blocks * sizeof(unsigned), "SM ids");
    d->stream().enqueue(
        [&] { testing::launch_record_sm_ids(d->cuda_stream(), ids.as<unsigned>(), blocks, spin); });
    d->stream().synchronize();
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(d->cuda_stream())));
    const std::vector<unsigned> sms = copy_to_host<unsigned>(ids.data(), blocks);
    const std::set<unsigned> distinct(sms.begin(), sms.end());
    const std::string partition = registry.sm_note();
    EXPECT_GT(distinct.size(), 0u);
    // The note names the share, e.g. "its own 64 of the 132 SMs".
    const std::size_t at = partition.find("its own ");
    ASSERT_NE(at, std::string::npos) << partition;
    const unsigned share = static_cast<unsigned>(std::stoul(partition.substr(at + 8)));
    EXPECT_LE(distinct.size(), share) << d->name() << " ran on more SMs than its share";
  }
}

TEST(CudaDevices, MoreMemoryThanTheCardHasIsAClearErrorNotAHang) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  const std::size_t total_mib = visible_gpus().gpus[0].total_bytes / kMiB;
  try {
    registry.set_logical_device_configuration(0, {{total_mib / 2 + 1}, {total_mib / 2 + 1}});
    FAIL() << "configured more memory than the card has";
  } catch (const ConfigurationError& e) {
    EXPECT_NE(std::string(e.what()).find("free of"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(registry.initialized());
}

TEST(CudaDevices, OneDevicePerPhysicalGpu) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_physical_device_configuration({0}, 128);
  const std::vector<Device*>& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->kind(), DeviceKind::kCudaPhysicalGpu);
  EXPECT_EQ(devices[0]->memory().limit(), 128 * kMiB);
  EXPECT_NE(registry.description().find("1 Physical GPU, 1 Logical GPU (one per physical GPU: "
                                        "/gpu:0 = GPU:0 "),
            std::string::npos)
      << registry.description();

  DeviceRegistry whole;
  whole.set_physical_device_configuration({0});
  EXPECT_GT(whole.logical_devices()[0]->memory().limit(), 128 * kMiB) << "the card's free memory";
}

TEST(CudaDevices, EventsTimeTheWorkBetweenThem) {
  MIRRORLAB_REQUIRE_CUDA_GPUS(1);
  DeviceRegistry registry;
  registry.set_logical_device_configuration(0, {{16}});
  Device* d = registry.logical_devices()[0];
  CudaApi& api = process_cuda_api();
  ApiEvent start(api), end(api);
  EXPECT_THROW(api.elapsed_ms(start.get(), end.get()), CudaError) << "never recorded";
  d->stream().enqueue([&] {
    api.record_event(start.get(), d->cuda_stream());
    testing::launch_spin(d->cuda_stream(), 1'000'000);
    api.record_event(end.get(), d->cuda_stream());
  });
  d->stream().synchronize();
  api.synchronize_event(end.get());
  EXPECT_GT(api.elapsed_ms(start.get(), end.get()), 0.0f);
}

}  // namespace
}  // namespace mirrorlab::vgpu
