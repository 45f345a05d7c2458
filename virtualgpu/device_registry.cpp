#include "virtualgpu/device_registry.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

namespace mirrorlab::vgpu {

void DeviceRegistry::set_logical_device_configuration(
    std::vector<LogicalDeviceConfiguration> configs) {
  if (initialized()) {
    throw ConfigurationError(
        "Virtual devices cannot be modified after being initialized: configure the devices "
        "before the first use of logical_devices()");
  }
  if (configs.empty()) {
    throw ConfigurationError("no devices configured: ask for at least 1 virtual GPU");
  }
  if (configs.size() > static_cast<std::size_t>(kMaxDevices)) {
    throw ConfigurationError(std::to_string(configs.size()) + " virtual GPUs asked for; at most " +
                             std::to_string(kMaxDevices) + " are supported");
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].memory_limit_mib == 0) {
      throw ConfigurationError("memory limit of /gpu:" + std::to_string(i) +
                               " is 0 MiB: give each virtual GPU at least 1 MiB");
    }
    // A limit the address space cannot even express is a typo, not a plan.
    if (configs[i].memory_limit_mib > (std::size_t{1} << 24)) {
      throw ConfigurationError("memory limit of /gpu:" + std::to_string(i) + " is " +
                               std::to_string(configs[i].memory_limit_mib) +
                               " MiB, more than 16 TiB: give the limit in MiB (1024 = 1 GiB)");
    }
  }
  configs_ = std::move(configs);
}

void DeviceRegistry::set_logical_device_configuration(int count, std::size_t memory_limit_mib) {
  if (count < 1) {
    throw ConfigurationError(std::to_string(count) +
                             " virtual GPUs asked for: ask for at least 1");
  }
  if (count > kMaxDevices) {
    throw ConfigurationError(std::to_string(count) + " virtual GPUs asked for; at most " +
                             std::to_string(kMaxDevices) + " are supported");
  }
  set_logical_device_configuration(std::vector<LogicalDeviceConfiguration>(
      static_cast<std::size_t>(count), LogicalDeviceConfiguration{memory_limit_mib}));
}

namespace {

// Device threads (and the host thread waiting for them) poll briefly before sleeping only when
// each has a core of its own; otherwise polling would steal the cores the work needs.
// MIRRORLAB_WAIT_POLICY=active|passive overrides the choice, as OMP_WAIT_POLICY does for OpenMP.
bool poll_before_sleeping(std::size_t devices) {
  if (const char* policy = std::getenv("MIRRORLAB_WAIT_POLICY")) {
    if (std::string(policy) == "active") return true;
    if (std::string(policy) == "passive") return false;
  }
  return devices + 1 <= std::thread::hardware_concurrency();
}

}  // namespace

const std::vector<Device*>& DeviceRegistry::logical_devices() {
  if (!initialized()) {
    const bool poll = poll_before_sleeping(configs_.size());
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      owned_.push_back(std::make_unique<Device>(static_cast<int>(i), DeviceKind::kCpuVirtualGpu,
                                                configs_[i].memory_limit_mib * kMiB));
      devices_.push_back(owned_.back().get());
      if (poll) devices_.back()->stream().set_spin_wait(std::chrono::microseconds(250));
    }
  }
  return devices_;
}

}  // namespace mirrorlab::vgpu
