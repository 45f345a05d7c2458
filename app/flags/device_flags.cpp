#include "app/flags/device_flags.h"

#include <cstdio>

#include "CLI/CLI.hpp"
#include "app/flags/flags.h"
#include "app/output/printed_text.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::app {

void add_device_flags(CLI::App* command, DeviceFlags& flags, int default_gpus) {
  add_choice_flag(command, "--backend", flags.backend, {"cpu", "cuda", "auto"},
                  "Devices: cpu (CPU-backed virtual GPUs), cuda (CUDA GPUs), or auto (cuda when "
                  "a GPU is visible, else cpu)");
  add_whole_number_flag(command, "--gpus", flags.gpus, 1, vgpu::DeviceRegistry::kMaxDevices,
                        "Number of GPUs (replicas); with --backend cuda, logical GPUs carved "
                        "from one card. Default " +
                            std::to_string(default_gpus) +
                            ", or one per --memory-limit or --devices entry")
      ->default_str("");
  add_whole_number_list_flag(command, "--memory-limit", flags.memory_limits_mib, 1,
                             kMaxMemoryLimitMib,
                             "Memory limit of each GPU in MiB, or a comma-separated list, one "
                             "per GPU")
      ->type_name("MIB[,MIB...]")
      ->default_str(std::to_string(kDefaultMemoryLimitMib));
  add_whole_number_list_flag(command, "--devices", flags.physical_gpus, 0, 1023,
                             "Physical GPUs to use (--backend cuda): one number picks the card to "
                             "carve logical GPUs from; several (0,1) give one device per card")
      ->type_name("I[,J...]");
  command->add_flag("--sm-split", flags.sm_split,
                    "Give each logical GPU its own share of the card's SMs (CUDA green "
                    "contexts), not only its own memory");
  command->add_flag("--cuda-graphs,!--no-cuda-graphs", flags.cuda_graphs,
                    "On CUDA GPUs, capture each replica's forward and backward once as a CUDA "
                    "graph and launch it as one call a step (the default; the weights are the "
                    "same bit for bit without)");
}

// The flag's default is the devices' own (core::logical_devices gives it to a device without a
// limit).
static_assert(kDefaultMemoryLimitMib ==
              static_cast<std::int64_t>(vgpu::LogicalDeviceConfiguration{}.memory_limit_mib));

std::int64_t memory_limit_mib(const DeviceFlags& flags, int i) {
  DeviceFlags reaching = flags;
  reaching.gpus = i + 1;  // as many devices as it takes to have device i
  return static_cast<std::int64_t>(
      core::logical_devices(reaching)[static_cast<std::size_t>(i)].memory_limit_mib);
}

int device_count(const DeviceFlags& flags, std::string* problem) {
  const int listed = static_cast<int>(flags.memory_limits_mib.size());
  const int cards = static_cast<int>(flags.physical_gpus.size());
  if ((cards > 0 || flags.sm_split) && flags.backend == "cpu") {
    *problem = std::string(cards > 0 ? "--devices picks" : "--sm-split splits") +
               " physical GPUs: use it with --backend cuda (or auto)";
  } else if (cards > 1 && flags.sm_split) {
    *problem = "--sm-split splits one GPU among logical GPUs, but --devices lists " +
               std::to_string(cards) + " GPUs (one device each): pick one GPU with --devices";
  } else if (cards > 1 && flags.gpus != 0 && flags.gpus != cards) {
    *problem = "--devices lists " + std::to_string(cards) +
               " GPUs (one device each) but --gpus is " + std::to_string(flags.gpus) +
               ": leave out --gpus, or pick one GPU with --devices to carve --gpus logical GPUs";
  } else if (cards > 1 && listed > 1) {
    *problem = "with --devices a,b give one --memory-limit for all of them";
  }
  if (!problem->empty()) return 0;
  if (cards > 1) return cards;
  if (flags.gpus == 0) return listed > 1 ? listed : 2;
  if (listed > 1 && listed != flags.gpus) {
    *problem = "--memory-limit lists " + std::to_string(listed) + " limits but --gpus is " +
               std::to_string(flags.gpus) + ": give one limit for all devices or one per device";
  }
  return flags.gpus;
}

int all_reduce_device_count(const DeviceFlags& flags, std::string* problem) {
  const int gpus = device_count(flags, problem);
  if (problem->empty() && gpus < 2) {
    *problem = "--gpus " + std::to_string(gpus) + ": an all-reduce needs at least 2 devices";
  }
  return gpus;
}

DevicePlan plan_devices(const DeviceFlags& flags, int count) {
  DevicePlan plan;
  plan.backend = flags.backend;
  plan.physical_gpus = flags.physical_gpus;
  plan.sm_split = flags.sm_split;
  // No --memory-limit with --devices a,b: each device may use its whole card.
  if (!flags.memory_limits_mib.empty()) {
    plan.card_limit_mib = static_cast<std::size_t>(flags.memory_limits_mib[0]);
  }
  DeviceFlags counted = flags;
  counted.gpus = count;
  plan.devices = core::logical_devices(counted);
  return plan;
}

bool requires_cuda(const DevicePlan& plan) {
  return plan.backend == "cuda" ||
         (plan.backend == "auto" && (!plan.physical_gpus.empty() || plan.sm_split));
}

std::string cuda_flag(const DevicePlan& plan) {
  if (plan.backend == "cuda") return "--backend cuda";
  return plan.physical_gpus.empty() ? "--sm-split" : "--devices";
}

namespace {

std::string no_gpu_error(const DevicePlan& plan, const vgpu::GpuInventory& inventory) {
  return cuda_flag(plan) + ": " + inventory.unavailable_reason +
         ": use --backend cpu for CPU-backed virtual GPUs";
}

// --backend auto and cuda, resolved against what is visible: true for CUDA devices. Auto falls
// back to CPU-backed virtual GPUs, saying why, unless the flags name GPUs (--devices, --sm-split).
bool use_cuda(const DevicePlan& plan, vgpu::DeviceRegistry& registry, bool why_no_gpu_said) {
  if (plan.backend == "cpu") return false;
  const vgpu::GpuInventory& inventory = registry.gpu_inventory();
  if (requires_cuda(plan) && inventory.gpus.empty()) {
    throw vgpu::ConfigurationError(no_gpu_error(plan, inventory));
  }
  if (plan.backend != "auto") return true;
  if (inventory.gpus.empty()) {
    print_wrapped(formatted("INFO: --backend auto: %s; using CPU-backed virtual GPUs",
                            why_no_gpu_said ? "no CUDA GPU visible (said above)"
                                            : inventory.unavailable_reason.c_str()));
    return false;
  }
  print_wrapped(formatted("INFO: --backend auto: %zu CUDA GPU%s visible; using CUDA devices",
                          inventory.gpus.size(), inventory.gpus.size() == 1 ? "" : "s"));
  return true;
}

}  // namespace

void check_gpu_visible(const DevicePlan& plan) {
  if (!requires_cuda(plan)) return;
  const vgpu::GpuInventory inventory = vgpu::enumerate_gpus();
  if (inventory.gpus.empty()) throw vgpu::ConfigurationError(no_gpu_error(plan, inventory));
}

const std::vector<vgpu::Device*>& make_devices(const DevicePlan& plan,
                                               vgpu::DeviceRegistry& registry,
                                               bool why_no_gpu_said) {
  const bool cuda = use_cuda(plan, registry, why_no_gpu_said);
  if (!cuda) {
    registry.set_logical_device_configuration(plan.devices);
  } else if (plan.physical_gpus.size() > 1) {
    registry.set_physical_device_configuration(plan.physical_gpus, plan.card_limit_mib);
  } else {
    const int card = plan.physical_gpus.empty() ? 0 : plan.physical_gpus[0];
    registry.set_logical_device_configuration(card, plan.devices, plan.sm_split);
  }
  const std::vector<vgpu::Device*>& devices = registry.logical_devices();
  print_wrapped(registry.description());
  if (!registry.sm_note().empty()) {
    print_wrapped(formatted("INFO: %s%s", registry.sm_note().c_str(),
                            plan.sm_split ? "" : " (--sm-split gives each its own share)"));
  }
  return devices;
}

}  // namespace mirrorlab::app
