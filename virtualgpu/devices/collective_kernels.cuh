// Device-side pieces shared by the collectives' kernels (collective_kernels.cu and
// one_shot_all_reduce.cu). CUDA sources only.
#pragma once

#include <cstddef>

#include "virtualgpu/devices/collective_elements.h"

namespace mirrorlab::vgpu {

__device__ inline std::size_t global_thread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

__device__ inline float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

}  // namespace mirrorlab::vgpu
