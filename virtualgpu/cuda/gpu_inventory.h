// Which CUDA GPUs a process sees, their free memory, and peer access between them, written once
// over a CudaApi (cuda_api.h), so that every build tests them against a fake
// (tests/virtualgpu/test_gpu_inventory.cpp) and only the CudaApi's runtime calls are left to a GPU.
// This process's GPUs: process_cuda_api.h's enumerate_gpus().
#pragma once

#include <cstddef>
#include <vector>

#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::vgpu {

// The GPUs `api` sees: each one's properties and free memory (asked with that GPU current, the
// caller's current GPU put back after) and which pairs can reach each other's memory. Never
// throws for "no GPU": unavailable_reason says why there is none ("no CUDA GPU visible
// (cudaGetDeviceCount: ...)"), and what to do where the driver is missing or too old for this
// build's runtime (CUDA's own words say "driver version is insufficient" for both). A GPU that is
// there but does not answer throws CudaError.
GpuInventory enumerate_gpus(CudaApi& api);

// GPU `ordinal`'s free memory now, asked with it current (the caller's GPU put back after).
std::size_t gpu_free_bytes(CudaApi& api, int ordinal);

// Lets GPU `gpu` reach `peer`'s memory when the hardware allows it (`gpu` made current for the
// call, the caller's put back after); false, and nothing enabled, when it cannot.
bool enable_peer_access(CudaApi& api, int gpu, int peer);

// The same for each pair of `ordinals`, both ways; pairs that cannot are left to copy through the
// host.
void enable_peer_access(CudaApi& api, const std::vector<int>& ordinals);

}  // namespace mirrorlab::vgpu
