// Device configuration, frozen once devices are in use, as in TensorFlow:
//   tf.config.set_logical_device_configuration(
//       gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

#include "virtualgpu/device.h"

namespace mirrorlab::vgpu {

// A user mistake in the device configuration; what() says what was wrong and what to do.
class ConfigurationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LogicalDeviceConfiguration {
  std::size_t memory_limit_mib = 1024;
};

// Owns the devices of one run. Not a global: a program (or a test) may hold several.
class DeviceRegistry {
 public:
  static constexpr int kMaxDevices = 64;

  // Replaces the configuration: one CPU-backed virtual GPU per entry. Throws ConfigurationError
  // for an empty list, more than kMaxDevices entries, a limit of 0 MiB, or when the devices are
  // already in use ("Virtual devices cannot be modified after being initialized").
  void set_logical_device_configuration(std::vector<LogicalDeviceConfiguration> configs);
  // Shorthand: `count` devices of `memory_limit_mib` each.
  void set_logical_device_configuration(int count, std::size_t memory_limit_mib);

  // The devices, created on first call (this freezes the configuration). Default: one device.
  const std::vector<Device*>& logical_devices();
  bool initialized() const { return !owned_.empty(); }
  const std::vector<LogicalDeviceConfiguration>& configuration() const { return configs_; }

 private:
  std::vector<LogicalDeviceConfiguration> configs_{LogicalDeviceConfiguration{}};
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
};

}  // namespace mirrorlab::vgpu
