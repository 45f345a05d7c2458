// The CudaApi (cuda/cuda_api.h) this process's CUDA devices are made with: the CUDA runtime, with
// the collectives' kernels (collective_kernels.h) as its launches. The device registry gives it
// to every CUDA device; tests make devices with a fake instead
// (tests/support/cuda/fake_cuda_api.h).
#pragma once

#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::vgpu {

// In a build without CUDA: throws CudaError saying so (no_cuda_error).
CudaApi& process_cuda_api();

// The GPUs this process sees: enumerate_gpus(process_cuda_api()) (cuda/gpu_inventory.h); in a
// build without CUDA, none, with the reason saying the build has no CUDA. Never throws for "no
// GPU".
GpuInventory enumerate_gpus();

}  // namespace mirrorlab::vgpu
