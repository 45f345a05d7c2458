// Device configuration, as tf.config.set_logical_device_configuration does it.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "virtualgpu/cuda/gpu_configuration.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::vgpu {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigurationError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceRegistry, DefaultIsOneDevice) {
  DeviceRegistry registry;
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->name(), "/gpu:0");
  EXPECT_EQ(devices[0]->kind(), DeviceKind::kCpuVirtualGpu);
}

TEST(DeviceRegistry, NDevicesWithNamesAndLimits) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 256);
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(devices[i]->name(), "/gpu:" + std::to_string(i));
    EXPECT_EQ(devices[i]->index(), i);
    EXPECT_EQ(devices[i]->memory().limit(), 256 * kMiB);
    EXPECT_EQ(devices[i]->memory().device_name(), devices[i]->name());
  }
}

// Asked for (the measuring commands), each CPU virtual GPU runs on a CPU of its own, round robin
// over the CPUs the process may use; by default, or with MIRRORLAB_PROC_BIND=false, they are
// free to move, and MIRRORLAB_PROC_BIND=true binds them whatever the command asked.
TEST(DeviceRegistry, CpuDevicesRunEachOnACpuWhenAsked) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) GTEST_SKIP() << "this process may run on one CPU only";
  const int n = static_cast<int>(cpus.size()) + 1;  // one more than the CPUs: wraps round
  DeviceRegistry registry;
  registry.set_bind_threads_to_cpus(true);
  registry.set_logical_device_configuration(n, 64);
  const auto& devices = registry.logical_devices();
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(devices[i]->stream().bound_cpu(), cpus[i % cpus.size()]) << devices[i]->name();
  }
  const auto bound = [](const char* env, bool asked) {
    if (env) setenv("MIRRORLAB_PROC_BIND", env, 1);
    DeviceRegistry r;
    r.set_bind_threads_to_cpus(asked);
    r.set_logical_device_configuration(2, 64);
    const auto& d = r.logical_devices();
    unsetenv("MIRRORLAB_PROC_BIND");
    return d[0]->stream().bound_cpu() >= 0 && d[1]->stream().bound_cpu() >= 0;
  };
  EXPECT_FALSE(bound(nullptr, false));  // the default: free to move
  EXPECT_FALSE(bound("false", true));
  EXPECT_TRUE(bound("true", false));
}

TEST(DeviceRegistry, WaitersPollOnlyWhenTheCpusThisProcessMayUseGiveEachACore) {
  // mpirun binds each rank to one core: there a host thread polling for its one device would
  // take the core the device needs (a fixed 0.25-0.5 ms per all-reduce across workers, measured
  // with bench_workers_all_reduce). The count is of the CPUs allowed, not of the machine's.
  const auto polls = [](int devices) {
    DeviceRegistry r;
    r.set_logical_device_configuration(devices, 64);
    return r.logical_devices()[0]->stream().spin_wait().count() > 0;
  };
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "this process may run on one CPU only";
  unsetenv("MIRRORLAB_WAIT_POLICY");
  bool bound_to_one = true, with_all = false;
  std::thread([&] {  // the affinity is the calling thread's: narrow it in a thread of its own
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &all)) {
        CPU_SET(cpu, &one);
        break;
      }
    }
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    bound_to_one = polls(1);
  })
      .join();
  with_all = polls(1);
  EXPECT_FALSE(bound_to_one);            // 1 device + 1 host thread on 1 CPU: sleep
  EXPECT_TRUE(with_all);                 // on 2 CPUs or more each has its own: poll
  EXPECT_FALSE(polls(CPU_COUNT(&all)));  // one device per CPU leaves none for the host thread
}

TEST(DeviceRegistry, ListOfLimits) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration({{1024}, {512}});
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->memory().limit(), 1024 * kMiB);
  EXPECT_EQ(devices[1]->memory().limit(), 512 * kMiB);
}

TEST(DeviceRegistry, RejectsBadConfigurations) {
  DeviceRegistry registry;
  EXPECT_NE(
      error_of([&] { registry.set_logical_device_configuration(0, 1024); }).find("at least 1"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { registry.set_logical_device_configuration(65, 1024); }).find("at most 64"),
      std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration(2, 0); }).find("0 MiB"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration({}); }).find("at least 1"),
            std::string::npos);
  // Rejected configurations change nothing.
  EXPECT_EQ(registry.configuration().size(), 1u);
  EXPECT_FALSE(registry.initialized());
}

// CPU-backed virtual GPUs compute in host memory: a cap larger than it could ever give is refused,
// saying how much there is and what limits it.
TEST(DeviceRegistry, RefusesAMemoryLimitTheHostCannotBack) {
  HostMemory host;
  host.ram_bytes = std::size_t{1} << 30;
  DeviceRegistry registry;
  registry.set_host_memory(host);
  EXPECT_NO_THROW(registry.set_logical_device_configuration(2, 1024));
  try {
    registry.set_logical_device_configuration({{512}, {1025}});
    FAIL() << "a 1025 MiB limit on a 1 GiB host was accepted";
  } catch (const ConfigurationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/gpu:1 is 1025 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("1.0 GiB of RAM"), std::string::npos) << what;
    EXPECT_NE(what.find("at most 1024 MiB"), std::string::npos) << what;
  }
  EXPECT_EQ(registry.configuration().size(), 2u);  // unchanged by the refused call

  host.mappable_bytes = std::size_t{300} << 20;  // under ulimit -v
  host.mappable_source = "ulimit -v (RLIMIT_AS)";
  DeviceRegistry limited;
  limited.set_host_memory(host);
  try {
    limited.set_logical_device_configuration(1, 512);
    FAIL() << "a 512 MiB limit with 300 MiB of address space left was accepted";
  } catch (const ConfigurationError& e) {
    EXPECT_NE(std::string(e.what()).find("0.3 GiB of address space left under ulimit -v"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeviceRegistry, FrozenOnceInUse) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 128);
  registry.logical_devices();
  const std::string msg = error_of([&] { registry.set_logical_device_configuration(4, 128); });
  EXPECT_NE(msg.find("cannot be modified after being initialized"), std::string::npos) << msg;
  for (const std::function<void()>& change : std::vector<std::function<void()>>{
           [&] { registry.set_logical_device_configuration(0, {{16}}); },
           [&] { registry.set_physical_device_configuration({0}); },
           [&] { registry.set_gpu_inventory(GpuInventory{}); }}) {
    EXPECT_NE(error_of(change).find("cannot be"), std::string::npos);
  }
  EXPECT_EQ(registry.logical_devices().size(), 2u);
}

TEST(DeviceRegistry, DeviceStreamsAreNamedAfterTheDevice) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 16);
  EXPECT_EQ(registry.logical_devices()[1]->stream().name(), "/gpu:1");
  EXPECT_STREQ(to_string(DeviceKind::kCpuVirtualGpu), "CPU-backed virtual GPU");
}

// A made-up card: the configuration rules are checked without a GPU.
GpuInventory one_gpu(std::size_t free_mib = 80000) {
  GpuInventory inventory;
  inventory.cuda_built = true;
  PhysicalGpu gpu;
  gpu.name = "Test GPU";
  gpu.total_bytes = 81559 * kMiB;
  gpu.free_bytes = free_mib * kMiB;
  gpu.sm_count = 132;
  inventory.gpus = {gpu};
  inventory.peer_access = {{false}};
  return inventory;
}

GpuInventory two_gpus() {
  GpuInventory inventory = one_gpu();
  inventory.gpus.push_back(inventory.gpus[0]);
  inventory.gpus[1].ordinal = 1;
  inventory.peer_access = {{false, true}, {true, false}};
  return inventory;
}

TEST(DeviceRegistry, ListsTheCpuThenEachGpuAsTensorFlowNamesThem) {
  DeviceRegistry registry;
  registry.set_gpu_inventory(two_gpus());
  const std::vector<PhysicalDevice> devices = registry.list_physical_devices();
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0].name, "/physical_device:CPU:0");
  EXPECT_EQ(devices[0].device_type, "CPU");
  EXPECT_EQ(devices[2].name, "/physical_device:GPU:1");
  EXPECT_EQ(devices[2].device_type, "GPU");
}

TEST(DeviceRegistry, NoGpuListsTheCpuOnly) {
  DeviceRegistry registry;
  GpuInventory none;
  none.unavailable_reason = "no CUDA GPU visible (test)";
  registry.set_gpu_inventory(none);
  ASSERT_EQ(registry.list_physical_devices().size(), 1u);
  const std::string msg = error_of([&] {
    registry.set_logical_device_configuration(0, {{1024}, {1024}});
  });
  EXPECT_NE(msg.find("no CUDA GPU visible (test)"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { registry.set_physical_device_configuration({0, 1}); }), "");
  EXPECT_EQ(registry.backend(), DeviceBackend::kCpuVirtualGpus) << "rejected: nothing changes";
}

TEST(DeviceRegistry, LogicalGpusOnOneCardAreConfiguredWithTheirLimits) {
  DeviceRegistry registry;
  registry.set_gpu_inventory(one_gpu());
  registry.set_logical_device_configuration(0, {{1024}, {2048}}, true);
  EXPECT_EQ(registry.backend(), DeviceBackend::kCudaLogicalGpus);
  ASSERT_EQ(registry.configuration().size(), 2u);
  EXPECT_EQ(registry.configuration()[1].memory_limit_mib, 2048u);
  EXPECT_EQ(registry.physical_gpus(), (std::vector<int>{0, 0}));
  EXPECT_TRUE(registry.sm_split());
  EXPECT_FALSE(registry.initialized());
  // And back to CPU-backed virtual GPUs: each configuration replaces the last.
  registry.set_logical_device_configuration(2, 64);
  EXPECT_EQ(registry.backend(), DeviceBackend::kCpuVirtualGpus);
  EXPECT_TRUE(registry.physical_gpus().empty());
  EXPECT_FALSE(registry.sm_split());
}

TEST(DeviceRegistry, MoreMemoryThanTheCardHasIsAClearError) {
  DeviceRegistry registry;
  registry.set_gpu_inventory(one_gpu(8000));
  const std::string msg = error_of([&] {
    registry.set_logical_device_configuration(0, {{4096}, {4096}});
  });
  EXPECT_NE(msg.find("8192 MiB of GPU:0 (Test GPU)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8000 MiB free"), std::string::npos) << msg;
  EXPECT_EQ(registry.backend(), DeviceBackend::kCpuVirtualGpus);
  registry.set_logical_device_configuration(0, {{4096}, {3000}});  // 7096 + 256 reserve fit
  EXPECT_NE(error_of([&] { registry.set_physical_device_configuration({0}, 9000); }).find("free"),
            std::string::npos);
}

TEST(DeviceRegistry, LogicalGpusOnAMissingCardOrBadLimitsAreRejected) {
  DeviceRegistry registry;
  registry.set_gpu_inventory(one_gpu());
  EXPECT_NE(
      error_of([&] { registry.set_logical_device_configuration(1, {{1024}}); }).find("no GPU:1"),
      std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration(0, {{0}}); }).find("0 MiB"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.set_logical_device_configuration(
                  0, std::vector<LogicalDeviceConfiguration>(65, {16}));
            }).find("at most 64"),
            std::string::npos);
}

TEST(DeviceRegistry, OneDevicePerPhysicalGpu) {
  DeviceRegistry registry;
  registry.set_gpu_inventory(two_gpus());
  registry.set_physical_device_configuration({1, 0});
  EXPECT_EQ(registry.backend(), DeviceBackend::kCudaPhysicalGpus);
  EXPECT_EQ(registry.physical_gpus(), (std::vector<int>{1, 0}));
  ASSERT_EQ(registry.configuration().size(), 2u);
  EXPECT_EQ(registry.configuration()[0].memory_limit_mib, 0u) << "0: the whole card";
  EXPECT_NE(error_of([&] {
              registry.set_physical_device_configuration({0, 0});
            }).find("twice"),
            std::string::npos);
}

// Where no GPU is visible, making CUDA devices fails with CUDA's reason and changes nothing.
TEST(DeviceRegistry, MakingCudaDevicesWithoutAGpuFailsCleanly) {
  if (!enumerate_gpus().gpus.empty())
    GTEST_SKIP() << "a GPU is visible: test_cuda_devices covers it";
  DeviceRegistry registry;
  registry.set_gpu_inventory(one_gpu());  // claims a card that is not there
  registry.set_logical_device_configuration(0, {{64}, {64}});
  try {
    registry.logical_devices();
    FAIL() << "made CUDA devices with no GPU";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find(cuda_built() ? "cudaErrorInsufficientDriver" : "no CUDA"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(registry.initialized());
  EXPECT_EQ(registry.description(), "");
}

TEST(DeviceRegistry, DescriptionSaysWhatTheDevicesAre) {
  DeviceRegistry registry;
  EXPECT_EQ(registry.description(), "");
  registry.set_logical_device_configuration({{1024}, {512}});
  registry.logical_devices();
  EXPECT_EQ(
      registry.description(),
      "1 Physical CPU, 2 Logical GPUs (CPU-backed virtual GPUs: /gpu:0 1024 MiB /gpu:1 512 MiB)");
  EXPECT_EQ(registry.sm_note(), "");
}

}  // namespace
}  // namespace mirrorlab::vgpu
