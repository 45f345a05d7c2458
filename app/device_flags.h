// The device flags every command shares: --gpus N and --memory-limit MIB[,MIB...], turned into
// a DeviceRegistry configuration the way tf.config.set_logical_device_configuration takes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "virtualgpu/device_registry.h"

namespace mirrorlab::app {

struct DeviceFlags {
  int gpus = 0;  // 0: as many as --memory-limit lists, else 2
  std::vector<std::int64_t> memory_limits_mib{1024};
};

void add_device_flags(CLI::App* command, DeviceFlags& flags);

// The number of devices the flags ask for, or a sentence saying why they disagree.
int device_count(const DeviceFlags& flags, std::string* problem);

// One configuration per device (count from device_count).
std::vector<vgpu::LogicalDeviceConfiguration> device_configuration(const DeviceFlags& flags,
                                                                  int count);

// Configures `registry` (count from device_count) and prints TensorFlow's style of device line.
const std::vector<vgpu::Device*>& make_devices(const DeviceFlags& flags, int count,
                                               vgpu::DeviceRegistry& registry);

}  // namespace mirrorlab::app
