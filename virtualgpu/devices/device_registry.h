// Device configuration, frozen once devices are in use, as in TensorFlow:
//   tf.config.list_physical_devices()
//   tf.config.set_logical_device_configuration(
//       gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
// Three kinds of configuration, one registry:
//   - CPU-backed virtual GPUs (host memory, a thread each): the default, works everywhere;
//   - logical GPUs carved from one physical GPU: each its own capped cudaMalloc arena and
//     non-blocking stream, optionally its own SMs (green contexts);
//   - one device per physical GPU (GPU:0 and GPU:1, say).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/memory/host_memory.h"

namespace mirrorlab::vgpu {

struct LogicalDeviceConfiguration {
  std::size_t memory_limit_mib = 1024;
};

enum class DeviceBackend { kCpuVirtualGpus, kCudaLogicalGpus, kCudaPhysicalGpus };

// TensorFlow's PhysicalDevice: name "/physical_device:GPU:0", device_type "GPU".
struct PhysicalDevice {
  std::string name;
  std::string device_type;
};

// Owns the devices of one run. Not a global: a program (or a test) may hold several.
class DeviceRegistry {
 public:
  static constexpr int kMaxDevices = 64;

  DeviceRegistry() = default;
  ~DeviceRegistry();  // the devices go before the CUDA streams they use
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;

  // --- physical devices ---
  // What CUDA reports, asked on the first call (a CPU-only run never asks).
  const GpuInventory& gpu_inventory();
  // Uses `inventory` instead of asking CUDA (tests of the configuration rules). Call first.
  void set_gpu_inventory(GpuInventory inventory);
  // Uses `host` instead of asking the system (tests of the host-memory check). Call first.
  void set_host_memory(HostMemory host) { host_memory_ = std::move(host); }
  // Binds each CPU virtual GPU's thread to a CPU of its own (device i on the i-th CPU the process
  // may use, round robin), as OMP_PROC_BIND does for OpenMP: what the measuring commands want
  // (`compare`, `bench`), so that the OS cannot put two devices on one core while another idles
  // and a timing does not depend on where it placed them. Off by default: on a machine busy with
  // other work, threads free to move train faster. MIRRORLAB_PROC_BIND=true or false decides
  // for every command. Call before the devices are made.
  void set_bind_threads_to_cpus(bool bind) { bind_threads_ = bind; }

  // tf.config.list_physical_devices(): the CPU, then every visible GPU.
  std::vector<PhysicalDevice> list_physical_devices();

  // --- configuration: each call replaces the previous one ---
  // Throws ConfigurationError for an empty list, more than kMaxDevices entries, a limit of 0
  // MiB, or when the devices are already in use ("Virtual devices cannot be modified after
  // being initialized"); the configuration is then unchanged.
  // One CPU-backed virtual GPU per entry. Also throws for a limit larger than the host can back
  // (its RAM, or what `ulimit -v` leaves this process): a cap no allocation could ever reach.
  void set_logical_device_configuration(std::vector<LogicalDeviceConfiguration> configs);
  // Shorthand: `count` CPU-backed virtual GPUs of `memory_limit_mib` each.
  void set_logical_device_configuration(int count, std::size_t memory_limit_mib);
  // Logical GPUs carved from physical GPU `physical_gpu`, one per entry; with `sm_split` each
  // also gets its own share of the SMs where the driver has green contexts. Also throws when no
  // such GPU is visible or the limits add up to more than its free memory.
  void set_logical_device_configuration(int physical_gpu,
                                        std::vector<LogicalDeviceConfiguration> configs,
                                        bool sm_split = false);
  // One device per listed physical GPU. memory_limit_mib 0: the card's free memory when the
  // devices are made, less kGpuReserveBytes.
  void set_physical_device_configuration(std::vector<int> physical_gpus,
                                         std::size_t memory_limit_mib = 0);

  // The devices, created on first call (this freezes the configuration). Default: one CPU-backed
  // virtual GPU. Throws ConfigurationError (the card has not the memory any more) or CudaError;
  // the registry is then as before the call.
  const std::vector<Device*>& logical_devices();
  bool initialized() const { return !owned_.empty(); }
  const std::vector<LogicalDeviceConfiguration>& configuration() const { return configs_; }
  DeviceBackend backend() const { return backend_; }
  // The physical GPU of each device (CUDA backends), in device order; empty for the CPU.
  const std::vector<int>& physical_gpus() const { return physical_gpus_; }
  bool sm_split() const { return sm_split_; }

  // Once the devices exist, TensorFlow's line saying what they are, e.g. "1 Physical GPU, 2
  // Logical GPUs (logical GPUs on GPU:0 NVIDIA H100 80GB HBM3: /gpu:0 1024 MiB /gpu:1 1024 MiB)";
  // "" before.
  std::string description() const;
  // For CUDA devices: how they use the SMs (shared, or split, or why a split is not
  // available); "" otherwise.
  const std::string& sm_note() const { return sm_note_; }

 private:
  void check_configuration(const std::vector<LogicalDeviceConfiguration>& configs) const;
  void make_cpu_devices();
  void make_cuda_devices();

  DeviceBackend backend_ = DeviceBackend::kCpuVirtualGpus;
  bool bind_threads_ = false;
  std::vector<LogicalDeviceConfiguration> configs_{LogicalDeviceConfiguration{}};
  std::vector<int> physical_gpus_;
  bool sm_split_ = false;
  std::optional<GpuInventory> inventory_;
  std::optional<HostMemory> host_memory_;
  std::string sm_note_;
  // Declared before the devices so that it is destroyed after them: their streams are these.
  std::vector<std::unique_ptr<CudaExecution>> executions_;
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
};

}  // namespace mirrorlab::vgpu
