// `mirrorlab devices`: the physical devices and the logical devices the device flags make, as
// tf.config.list_physical_devices() and tf.config.list_logical_devices() print them, with a
// table of the GPUs (memory, SMs, peer access).
#pragma once

#include "app/flags/cli_declarations.h"
#include "app/flags/device_flags.h"

namespace mirrorlab::app {

struct DevicesOptions {
  DeviceFlags devices;
};

CLI::App* add_devices_command(CLI::App& app, DevicesOptions& options);
int run_devices(const DevicesOptions& options);

}  // namespace mirrorlab::app
