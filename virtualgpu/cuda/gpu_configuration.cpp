#include "virtualgpu/cuda/gpu_configuration.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>

namespace mirrorlab::vgpu {

std::string mib_text(std::size_t bytes) { return std::to_string(bytes / kMiB) + " MiB"; }

std::string memory_fit_problem(const PhysicalGpu& gpu, std::size_t free_bytes,
                               const std::vector<std::size_t>& limits_bytes,
                               std::size_t reserve_bytes) {
  std::size_t asked = 0;  // saturating: a sum past SIZE_MAX is still "too much"
  for (std::size_t limit : limits_bytes) {
    asked = limit > SIZE_MAX - asked ? SIZE_MAX : asked + limit;
  }
  const std::size_t usable = free_bytes > reserve_bytes ? free_bytes - reserve_bytes : 0;
  if (asked <= usable) return "";
  return "the devices ask for " + mib_text(asked) + " of GPU:" + std::to_string(gpu.ordinal) +
         " (" + gpu.name + "), which has " + mib_text(free_bytes) + " free of " +
         mib_text(gpu.total_bytes) + "; " + mib_text(reserve_bytes) +
         " stay free for CUDA itself (context, cuBLAS, NCCL), so at most " + mib_text(usable) +
         " can go to the devices";
}

SmSplitPlan plan_sm_split(unsigned sm_count, unsigned min_partition, unsigned alignment,
                          int devices) {
  SmSplitPlan plan;
  if (devices < 1) {
    plan.problem = "no devices to give SMs to";
    return plan;
  }
  if (alignment == 0) alignment = 1;
  const unsigned share = sm_count / static_cast<unsigned>(devices);
  const unsigned aligned = share / alignment * alignment;
  if (aligned == 0 || aligned < min_partition) {
    const unsigned smallest = min_partition > alignment ? min_partition : alignment;
    plan.problem = "the card's " + std::to_string(sm_count) + " SMs cannot be split " +
                   std::to_string(devices) + " ways: a partition needs at least " +
                   std::to_string(smallest) + " SMs (in steps of " + std::to_string(alignment) +
                   "), so at most " + std::to_string(sm_count / smallest) +
                   " logical GPUs can have SMs of their own";
    return plan;
  }
  plan.sms_per_device = aligned;
  return plan;
}

std::string gpu_selection_problem(const std::vector<int>& selection, const GpuInventory& gpus) {
  if (selection.empty()) return "no GPU is listed: give GPU numbers, e.g. 0,1";
  if (gpus.gpus.empty()) {
    return "physical GPUs are asked for, but " + (gpus.unavailable_reason.empty()
                                                      ? std::string("no CUDA GPU is visible")
                                                      : gpus.unavailable_reason);
  }
  const int visible = static_cast<int>(gpus.gpus.size());
  std::set<int> seen;
  for (int index : selection) {
    if (index < 0 || index >= visible) {
      return "there is no GPU:" + std::to_string(index) + " (" + std::to_string(visible) + " GPU" +
             (visible == 1 ? "" : "s") + " visible, numbered 0 to " + std::to_string(visible - 1) +
             ")";
    }
    if (!seen.insert(index).second) {
      return "GPU:" + std::to_string(index) + " is listed twice: list each GPU once";
    }
  }
  return "";
}

std::string physical_device_name(const char* device_type, int index) {
  return std::string("/physical_device:") + device_type + ":" + std::to_string(index);
}

}  // namespace mirrorlab::vgpu

namespace mirrorlab::vgpu {

std::string format_gpu_table(const GpuInventory& inventory) {
  if (inventory.gpus.empty()) return "";
  std::size_t name_width = 4;
  for (const PhysicalGpu& gpu : inventory.gpus) name_width = std::max(name_width, gpu.name.size());
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-*s %12s %10s %5s %8s\n", "GPU",
                static_cast<int>(name_width), "Name", "Memory MiB", "Free MiB", "SMs", "Compute");
  text += line;
  for (const PhysicalGpu& gpu : inventory.gpus) {
    std::snprintf(line, sizeof line, "%-5d %-*s %12zu %10zu %5d %6d.%d\n", gpu.ordinal,
                  static_cast<int>(name_width), gpu.name.c_str(), gpu.total_bytes / kMiB,
                  gpu.free_bytes / kMiB, gpu.sm_count, gpu.compute_major, gpu.compute_minor);
    text += line;
  }
  const std::size_t n = inventory.gpus.size();
  if (n < 2) return text + "Peer access: only one GPU\n";
  text += "Peer access (row reads and writes column's memory directly):\n      ";
  for (std::size_t j = 0; j < n; ++j) {
    std::snprintf(line, sizeof line, " GPU:%-2zu", j);
    text += line;
  }
  text += "\n";
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(line, sizeof line, "GPU:%-2zu", i);
    text += line;
    for (std::size_t j = 0; j < n; ++j) {
      const bool peer = i < inventory.peer_access.size() && j < inventory.peer_access[i].size() &&
                        inventory.peer_access[i][j];
      std::snprintf(line, sizeof line, " %6s", i == j ? "-" : (peer ? "yes" : "no"));
      text += line;
    }
    text += "\n";
  }
  return text;
}

}  // namespace mirrorlab::vgpu
