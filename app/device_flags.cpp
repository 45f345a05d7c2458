#include "app/device_flags.h"

#include <cstdio>

namespace mirrorlab::app {

void add_device_flags(CLI::App* command, DeviceFlags& flags) {
  command
      ->add_option("--gpus", flags.gpus,
                   "Number of virtual GPUs (replicas); default 2, or one per --memory-limit entry")
      ->check(CLI::Range(1, vgpu::DeviceRegistry::kMaxDevices));
  command
      ->add_option(
          "--memory-limit", flags.memory_limits_mib,
          "Memory limit of each virtual GPU in MiB, or a comma-separated list, one per GPU")
      ->delimiter(',')
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
}

int device_count(const DeviceFlags& flags, std::string* problem) {
  const int listed = static_cast<int>(flags.memory_limits_mib.size());
  if (flags.gpus == 0) return listed > 1 ? listed : 2;
  if (listed > 1 && listed != flags.gpus) {
    *problem = "--memory-limit lists " + std::to_string(listed) + " limits but --gpus is " +
               std::to_string(flags.gpus) + ": give one limit for all devices or one per device";
  }
  return flags.gpus;
}

std::vector<vgpu::LogicalDeviceConfiguration> device_configuration(const DeviceFlags& flags,
                                                                  int count) {
  std::vector<vgpu::LogicalDeviceConfiguration> configs;
  for (int i = 0; i < count; ++i) {
    const std::int64_t mib = flags.memory_limits_mib.size() > 1 ? flags.memory_limits_mib[i]
                                                                : flags.memory_limits_mib[0];
    configs.push_back({static_cast<std::size_t>(mib)});
  }
  return configs;
}

const std::vector<vgpu::Device*>& make_devices(const DeviceFlags& flags, int count,
                                               vgpu::DeviceRegistry& registry) {
  registry.set_logical_device_configuration(device_configuration(flags, count));
  const std::vector<vgpu::Device*>& devices = registry.logical_devices();
  std::printf("1 Physical CPU, %d Logical GPUs (CPU-backed virtual GPUs:", count);
  for (vgpu::Device* d : devices) {
    std::printf(" %s %zu MiB", d->name().c_str(), d->memory().limit() / vgpu::kMiB);
  }
  std::printf(")\n");
  return devices;
}

}  // namespace mirrorlab::app
