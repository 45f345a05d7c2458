#include "app/devices_command.h"

#include <cstdio>

#include "CLI/CLI.hpp"
#include "app/output/printed_text.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/cuda/gpu_configuration.h"

namespace mirrorlab::app {

CLI::App* add_devices_command(CLI::App& app, DevicesOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "devices",
      "List the physical devices (CPU, CUDA GPUs with memory, SMs and peer access) and the "
      "logical devices the device flags make, as tf.config.list_physical_devices() and "
      "list_logical_devices() do");
  o.devices.backend = "auto";  // show what this machine has
  add_device_flags(cmd, o.devices);
  return cmd;
}

int run_devices(const DevicesOptions& o) {
  std::string problem;
  const int count = device_count(o.devices, &problem);
  if (!problem.empty()) {
    std::fprintf(stderr, "mirrorlab devices: %s\nRun 'mirrorlab devices --help' for the flags.\n",
                 problem.c_str());
    return 2;
  }
  vgpu::DeviceRegistry registry;
  std::printf("Physical devices (tf.config.list_physical_devices()):\n");
  for (const vgpu::PhysicalDevice& d : registry.list_physical_devices()) {
    std::printf("PhysicalDevice(name='%s', device_type='%s')\n", d.name.c_str(),
                d.device_type.c_str());
  }
  const vgpu::GpuInventory& inventory = registry.gpu_inventory();
  std::printf("\nCUDA: %s", vgpu::cuda_build_description().c_str());
  if (inventory.driver_version > 0) {
    std::printf("; driver for CUDA %s", vgpu::cuda_version_text(inventory.driver_version).c_str());
  }
  std::printf("\n");
  if (inventory.gpus.empty()) {
    if (inventory.cuda_built) print_wrapped(inventory.unavailable_reason);
  } else {
    std::printf("%s", vgpu::format_gpu_table(inventory).c_str());
  }

  std::printf("\nLogical devices with these flags (tf.config.list_logical_devices()):\n");
  const std::vector<vgpu::Device*>& devices =
      make_devices(plan_devices(o.devices, count), registry, inventory.cuda_built);
  std::printf("LogicalDevice(name='/device:CPU:0', device_type='CPU')\n");
  // Each named as mirrorlab names it; what they are (CPU-backed, logical GPUs of a card) the
  // line above said.
  for (const vgpu::Device* d : devices) {
    std::printf("LogicalDevice(name='/device:GPU:%d', device_type='GPU')  # %s\n", d->index(),
                d->name().c_str());
  }
  return 0;
}

}  // namespace mirrorlab::app
