// The rules for putting devices on physical GPUs, as pure functions of what the GPUs report, so
// they are tested on any machine (the registry applies them to what CUDA says at run time).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {

// Memory a run needs on a card beside the arenas: the CUDA context's own allocations, kernel
// modules, cuBLAS workspaces and NCCL buffers. The arenas' limits must leave this much free.
inline constexpr std::size_t kGpuReserveBytes = std::size_t{256} << 20;

// "" when arenas of `limits_bytes` fit in `free_bytes` of `gpu` with `reserve_bytes` left over;
// otherwise a sentence naming the card, what was asked, what is free and what to do.
std::string memory_fit_problem(const PhysicalGpu& gpu, std::size_t free_bytes,
                               const std::vector<std::size_t>& limits_bytes,
                               std::size_t reserve_bytes = kGpuReserveBytes);

// How many SMs to ask the driver for per logical GPU when a card of `sm_count` SMs is split
// `devices` ways: the equal share rounded down to the driver's alignment, at least its minimum
// partition. `problem` says why no split is possible (too many devices for the card's SMs).
struct SmSplitPlan {
  unsigned sms_per_device = 0;
  std::string problem;
};
SmSplitPlan plan_sm_split(unsigned sm_count, unsigned min_partition, unsigned alignment,
                          int devices);

// "" when every entry of `selection` names a visible GPU once; otherwise what is wrong.
std::string gpu_selection_problem(const std::vector<int>& selection, const GpuInventory& gpus);

// TensorFlow's names: "/physical_device:GPU:0", "/physical_device:CPU:0".
std::string physical_device_name(const char* device_type, int index);

// "81559 MiB" (MiB rounded down, as nvidia-smi shows them).
std::string mib_text(std::size_t bytes);

}  // namespace mirrorlab::vgpu

namespace mirrorlab::vgpu {

// The GPUs as a table a person reads (number, name, memory, free, SMs, compute capability),
// then who can read whose memory directly. "" when there are no GPUs.
std::string format_gpu_table(const GpuInventory& inventory);

}  // namespace mirrorlab::vgpu
