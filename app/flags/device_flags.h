// The device flags every command shares, turned into a DeviceRegistry configuration the way
// tf.config.set_logical_device_configuration takes it:
//   --backend cpu|cuda|auto   CPU-backed virtual GPUs, CUDA GPUs, or CUDA when a GPU is visible
//   --gpus N                  how many devices (logical GPUs on one card with --backend cuda)
//   --memory-limit MIB[,...]  each device's arena cap
//   --devices 0,1             which physical GPUs: one picks the card to carve, several give one
//                             device per card
//   --sm-split                give each logical GPU its own SMs (CUDA green contexts)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/flags/cli_declarations.h"
#include "core/settings/run_settings.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::app {

inline constexpr std::int64_t kDefaultMemoryLimitMib = 1024;
inline constexpr std::int64_t kMaxMemoryLimitMib = std::int64_t{1} << 20;  // 1 TiB

// The device flags fill the run settings' own devices (core/settings/run_settings.h).
using DeviceFlags = core::DeviceSettings;

// `default_gpus`: what --gpus's help says a command uses when no flag gives a count (the command
// applies it; device_count() alone gives 2).
void add_device_flags(CLI::App* command, DeviceFlags& flags, int default_gpus = 2);

// The number of devices the flags ask for, or a sentence saying why they disagree.
int device_count(const DeviceFlags& flags, std::string* problem);
// The same for a command that all-reduces (compare, bench): fewer than 2 devices is a problem.
int all_reduce_device_count(const DeviceFlags& flags, std::string* problem);

// The memory limit of device `i` in MiB.
std::int64_t memory_limit_mib(const DeviceFlags& flags, int i);

// What the flags ask for, typed, read once: the devices to make and where. A command that lets
// its user change the devices later (the GUI's settings) replaces `devices` and makes them again;
// nothing goes back through the flags.
struct DevicePlan {
  std::string backend = "cpu";  // cpu, cuda or auto
  std::vector<int> physical_gpus;
  bool sm_split = false;
  // Several physical GPUs: one device per card, each capped at this (0: the whole card); the
  // count and limits in `devices` are not used.
  std::size_t card_limit_mib = 0;
  std::vector<vgpu::LogicalDeviceConfiguration> devices;
};

// The plan for `count` devices (count from device_count), one configuration each.
DevicePlan plan_devices(const DeviceFlags& flags, int count);

// True when the plan can only mean CUDA devices: --backend cuda, or auto with --devices or
// --sm-split. cuda_flag names the flag that asks ("--backend cuda", "--devices").
bool requires_cuda(const DevicePlan& plan);
std::string cuda_flag(const DevicePlan& plan);

// Configures `registry` as the plan says, makes the devices and prints the line TensorFlow's
// guide prints saying what they are ("1 Physical CPU, 2 Logical GPUs"; wrapped to the terminal).
// --backend auto takes CUDA devices when a GPU is visible, else CPU-backed virtual GPUs, and says
// which. Throws vgpu::ConfigurationError for what the user can fix (no GPU visible, too much memory
// asked for). `why_no_gpu_said`: the caller has printed why no GPU is visible (`devices`), so
// auto's fallback line points to it rather than saying it again.
const std::vector<vgpu::Device*>& make_devices(const DevicePlan& plan,
                                               vgpu::DeviceRegistry& registry,
                                               bool why_no_gpu_said = false);

// Throws vgpu::ConfigurationError when the plan needs a CUDA GPU (requires_cuda) and none is
// visible, with the sentence make_devices would give. For commands that make their devices late
// (the GUI's session): call it before slow work such as loading the dataset.
void check_gpu_visible(const DevicePlan& plan);

}  // namespace mirrorlab::app
