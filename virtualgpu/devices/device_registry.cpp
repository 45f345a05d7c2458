#include "virtualgpu/devices/device_registry.h"

#include <cstdlib>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#include <string>
#include <thread>
#include <utility>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/gpu_configuration.h"
#include "virtualgpu/cuda/gpu_inventory.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::vgpu {

DeviceRegistry::~DeviceRegistry() {
  devices_.clear();
  owned_.clear();       // joins the devices' threads and gives their memory back, then...
  executions_.clear();  // ...their CUDA streams go
}

// ------------------------------------------------------------------------ physical devices ---

const GpuInventory& DeviceRegistry::gpu_inventory() {
  if (!inventory_) inventory_ = enumerate_gpus();
  return *inventory_;
}

void DeviceRegistry::set_gpu_inventory(GpuInventory inventory) {
  if (initialized()) {
    throw ConfigurationError("the physical GPUs cannot be replaced once devices are in use");
  }
  inventory_ = std::move(inventory);
}

std::vector<PhysicalDevice> DeviceRegistry::list_physical_devices() {
  std::vector<PhysicalDevice> devices{{physical_device_name("CPU", 0), "CPU"}};
  for (const PhysicalGpu& gpu : gpu_inventory().gpus) {
    devices.push_back({physical_device_name("GPU", gpu.ordinal), "GPU"});
  }
  return devices;
}

// --------------------------------------------------------------------------- configuration ---

void DeviceRegistry::check_configuration(
    const std::vector<LogicalDeviceConfiguration>& configs) const {
  if (initialized()) {
    throw ConfigurationError(
        "Virtual devices cannot be modified after being initialized: configure the devices "
        "before the first use of logical_devices()");
  }
  if (configs.empty()) {
    throw ConfigurationError("no devices configured: ask for at least 1 virtual GPU",
                             ConfigurationSubject::kDeviceCount);
  }
  if (configs.size() > static_cast<std::size_t>(kMaxDevices)) {
    throw ConfigurationError(std::to_string(configs.size()) + " virtual GPUs asked for; at most " +
                                 std::to_string(kMaxDevices) + " are supported",
                             ConfigurationSubject::kDeviceCount);
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].memory_limit_mib == 0) {
      throw ConfigurationError("memory limit of /gpu:" + std::to_string(i) +
                                   " is 0 MiB: give each virtual GPU at least 1 MiB",
                               ConfigurationSubject::kMemoryLimit);
    }
    // A limit the address space cannot even express is a typo, not a plan.
    if (configs[i].memory_limit_mib > (std::size_t{1} << 24)) {
      throw ConfigurationError("memory limit of /gpu:" + std::to_string(i) + " is " +
                                   std::to_string(configs[i].memory_limit_mib) +
                                   " MiB, more than 16 TiB: give the limit in MiB (1024 = 1 GiB)",
                               ConfigurationSubject::kMemoryLimit);
    }
  }
}

void DeviceRegistry::set_logical_device_configuration(
    std::vector<LogicalDeviceConfiguration> configs) {
  check_configuration(configs);
  const HostMemory host = host_memory_ ? *host_memory_ : query_host_memory();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].memory_limit_mib * kMiB > host.can_back()) {
      throw ConfigurationError(
          "memory limit of /gpu:" + std::to_string(i) + " is " +
              std::to_string(configs[i].memory_limit_mib) +
              " MiB, more than this host can back: a CPU-backed virtual GPU computes in host "
              "memory, and this process has " +
              host.describe() + ". Give each virtual GPU at most " +
              std::to_string(host.can_back() / kMiB) +
              " MiB (a replica of the example CNN needs about 40 MiB)",
          ConfigurationSubject::kMemoryLimit);
    }
  }
  backend_ = DeviceBackend::kCpuVirtualGpus;
  configs_ = std::move(configs);
  physical_gpus_.clear();
  sm_split_ = false;
}

void DeviceRegistry::set_logical_device_configuration(int count, std::size_t memory_limit_mib) {
  if (count < 1) {
    throw ConfigurationError(std::to_string(count) + " virtual GPUs asked for: ask for at least 1",
                             ConfigurationSubject::kDeviceCount);
  }
  if (count > kMaxDevices) {
    throw ConfigurationError(std::to_string(count) + " virtual GPUs asked for; at most " +
                                 std::to_string(kMaxDevices) + " are supported",
                             ConfigurationSubject::kDeviceCount);
  }
  set_logical_device_configuration(std::vector<LogicalDeviceConfiguration>(
      static_cast<std::size_t>(count), LogicalDeviceConfiguration{memory_limit_mib}));
}

void DeviceRegistry::set_logical_device_configuration(
    int physical_gpu, std::vector<LogicalDeviceConfiguration> configs, bool sm_split) {
  check_configuration(configs);
  const GpuInventory& inventory = gpu_inventory();
  if (const std::string problem = gpu_selection_problem({physical_gpu}, inventory);
      !problem.empty()) {
    throw ConfigurationError("logical GPUs on GPU:" + std::to_string(physical_gpu) + ": " + problem,
                             ConfigurationSubject::kPhysicalGpus);
  }
  // Checked against the free memory CUDA reported; checked again when the devices are made.
  std::vector<std::size_t> limits;
  for (const LogicalDeviceConfiguration& c : configs) limits.push_back(c.memory_limit_mib * kMiB);
  const PhysicalGpu& gpu = inventory.gpus[static_cast<std::size_t>(physical_gpu)];
  if (const std::string problem = memory_fit_problem(gpu, gpu.free_bytes, limits);
      !problem.empty()) {
    throw ConfigurationError(problem, ConfigurationSubject::kMemoryLimit);
  }
  backend_ = DeviceBackend::kCudaLogicalGpus;
  physical_gpus_.assign(configs.size(), physical_gpu);
  configs_ = std::move(configs);
  sm_split_ = sm_split;
}

void DeviceRegistry::set_physical_device_configuration(std::vector<int> physical_gpus,
                                                       std::size_t memory_limit_mib) {
  if (initialized()) check_configuration(configs_);  // throws the "frozen" error
  const GpuInventory& inventory = gpu_inventory();
  if (const std::string problem = gpu_selection_problem(physical_gpus, inventory);
      !problem.empty()) {
    throw ConfigurationError(problem, ConfigurationSubject::kPhysicalGpus);
  }
  if (memory_limit_mib > 0) {
    check_configuration(
        std::vector<LogicalDeviceConfiguration>(physical_gpus.size(), {memory_limit_mib}));
    for (int index : physical_gpus) {
      const PhysicalGpu& gpu = inventory.gpus[static_cast<std::size_t>(index)];
      if (const std::string problem =
              memory_fit_problem(gpu, gpu.free_bytes, {memory_limit_mib * kMiB});
          !problem.empty()) {
        throw ConfigurationError(problem, ConfigurationSubject::kMemoryLimit);
      }
    }
  }
  backend_ = DeviceBackend::kCudaPhysicalGpus;
  configs_.assign(physical_gpus.size(), LogicalDeviceConfiguration{memory_limit_mib});
  physical_gpus_ = std::move(physical_gpus);
  sm_split_ = false;
}

// ------------------------------------------------------------------------------- creation ---

namespace {

// The CPUs this process may run on (Linux: its affinity mask, which a container or taskset may
// narrow); empty where that cannot be read.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
#endif
  return cpus;
}

// Device threads (and the host thread waiting for them) poll briefly before sleeping only when
// each has a core of its own; otherwise polling would steal the cores the work needs.
// MIRRORLAB_WAIT_POLICY=active|passive overrides the choice, as OMP_WAIT_POLICY does for OpenMP.
bool poll_before_sleeping(std::size_t devices) {
  if (const char* policy = std::getenv("MIRRORLAB_WAIT_POLICY")) {
    if (std::string(policy) == "active") return true;
    if (std::string(policy) == "passive") return false;
  }
  // The CPUs this process may use, not the machine's: under mpirun each rank is bound to one
  // core, where a waiting thread that polls takes the core from the device it waits for.
  const std::size_t allowed = allowed_cpus().size();
  const std::size_t cpus = allowed > 0 ? allowed : std::thread::hardware_concurrency();
  return devices + 1 <= cpus;
}

// A CPU virtual GPU is an engine of its own, as a GPU is: device i runs on the i-th allowed CPU
// (round robin when there are more devices than CPUs), so that the OS cannot put two devices on
// one core while another idles, which it does after the threads wake each other at a barrier,
// and timings stop depending on where it happened to place them (docs/results.md).
// MIRRORLAB_PROC_BIND=true or false overrides `wanted`, as OMP_PROC_BIND does for OpenMP.
void bind_to_cpus(const std::vector<std::unique_ptr<Device>>& devices, bool wanted) {
  if (const char* bind = std::getenv("MIRRORLAB_PROC_BIND")) {
    if (std::string(bind) == "false") wanted = false;
    if (std::string(bind) == "true") wanted = true;
  }
  if (!wanted) return;
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) return;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    devices[i]->stream().bind_to_cpu(cpus[i % cpus.size()]);
  }
}

}  // namespace

const std::vector<Device*>& DeviceRegistry::logical_devices() {
  if (!initialized()) {
    if (backend_ == DeviceBackend::kCpuVirtualGpus) {
      make_cpu_devices();
      bind_to_cpus(owned_, bind_threads_);
    } else {
      make_cuda_devices();
    }
    const bool poll = poll_before_sleeping(owned_.size());
    for (const std::unique_ptr<Device>& device : owned_) {
      devices_.push_back(device.get());
      if (poll) device->stream().set_spin_wait(std::chrono::microseconds(250));
    }
  }
  return devices_;
}

void DeviceRegistry::make_cpu_devices() {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    owned_.push_back(std::make_unique<Device>(static_cast<int>(i), DeviceKind::kCpuVirtualGpu,
                                              configs_[i].memory_limit_mib * kMiB));
  }
}

void DeviceRegistry::make_cuda_devices() {
  const GpuInventory& inventory = gpu_inventory();
  const bool logical = backend_ == DeviceBackend::kCudaLogicalGpus;
  // The limits, checked against what each card has free now: other programs may have taken
  // memory since the configuration was checked.
  auto check_fits = [&](int gpu, std::size_t free, const std::vector<std::size_t>& on_card) {
    const std::string problem =
        memory_fit_problem(inventory.gpus[static_cast<std::size_t>(gpu)], free, on_card);
    if (!problem.empty()) throw ConfigurationError(problem, ConfigurationSubject::kMemoryLimit);
  };
  CudaApi& api = process_cuda_api();
  std::vector<std::size_t> limits;
  if (logical) {
    for (const LogicalDeviceConfiguration& c : configs_)
      limits.push_back(c.memory_limit_mib * kMiB);
    check_fits(physical_gpus_.front(), gpu_free_bytes(api, physical_gpus_.front()), limits);
  } else {
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      const int gpu = physical_gpus_[i];
      const std::size_t free = gpu_free_bytes(api, gpu);
      // No limit given: what the card has free, less what CUDA itself needs (1 byte when
      // nothing is left, so that the check says so).
      const std::size_t limit = configs_[i].memory_limit_mib > 0
                                    ? configs_[i].memory_limit_mib * kMiB
                                    : (free > kGpuReserveBytes ? free - kGpuReserveBytes : 1);
      check_fits(gpu, free, {limit});
      limits.push_back(limit);
    }
  }

  // Built in locals and kept only when everything worked: a failure leaves the registry as it was.
  std::vector<std::unique_ptr<CudaExecution>> executions;
  std::vector<std::unique_ptr<Device>> devices;
  std::string sm_note;
  if (logical) {
    CudaExecutionSet set = make_cuda_executions(api, physical_gpus_.front(),
                                                static_cast<int>(configs_.size()), sm_split_);
    executions = std::move(set.devices);
    sm_note = std::move(set.sm_note);
  } else {
    for (int gpu : physical_gpus_) {
      CudaExecutionSet set = make_cuda_executions(api, gpu, 1, false);
      executions.push_back(std::move(set.devices.front()));
    }
    if (physical_gpus_.size() > 1) enable_peer_access(api, physical_gpus_);
  }
  const DeviceKind kind = logical ? DeviceKind::kCudaLogicalGpu : DeviceKind::kCudaPhysicalGpu;
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    const int gpu = physical_gpus_[i];
    devices.push_back(std::make_unique<Device>(static_cast<int>(i), kind, limits[i],
                                               make_cuda_allocator(api, gpu), gpu,
                                               executions[i]->stream(), &api));
    // Kernels are launched from the device's thread: make its GPU current there first.
    devices.back()->stream().enqueue([&api, gpu] { api.set_current_gpu(gpu); });
  }
  try {
    for (const std::unique_ptr<Device>& device : devices) device->stream().synchronize();
  } catch (...) {
    devices.clear();  // before the streams they use
    throw;
  }
  executions_ = std::move(executions);
  owned_ = std::move(devices);
  sm_note_ = std::move(sm_note);
}

// ---------------------------------------------------------------------------- description ---

std::string DeviceRegistry::description() const {
  if (!initialized()) return "";
  const std::size_t n = owned_.size();
  std::string text;
  auto list_devices = [&] {
    for (const std::unique_ptr<Device>& d : owned_) {
      text += " " + d->name() + " " + std::to_string(d->memory().limit() / kMiB) + " MiB";
    }
  };
  const std::string logical = std::to_string(n) + " Logical GPU" + (n == 1 ? "" : "s");
  if (backend_ == DeviceBackend::kCpuVirtualGpus) {
    text = "1 Physical CPU, " + logical + " (CPU-backed virtual GPUs:";
    list_devices();
  } else if (backend_ == DeviceBackend::kCudaLogicalGpus) {
    const int gpu = physical_gpus_.front();
    text = "1 Physical GPU, " + logical + " (logical GPUs on GPU:" + std::to_string(gpu) + " " +
           inventory_->gpus[static_cast<std::size_t>(gpu)].name + ":";
    list_devices();
  } else {
    text = std::to_string(n) + " Physical GPU" + (n == 1 ? "" : "s") + ", " + logical +
           " (one per physical GPU:";
    for (std::size_t i = 0; i < n; ++i) {
      const int gpu = physical_gpus_[i];
      text += std::string(i == 0 ? " " : ", ") + owned_[i]->name() +
              " = GPU:" + std::to_string(gpu) + " " +
              inventory_->gpus[static_cast<std::size_t>(gpu)].name + " " +
              std::to_string(owned_[i]->memory().limit() / kMiB) + " MiB";
    }
  }
  return text + ")";
}

}  // namespace mirrorlab::vgpu
