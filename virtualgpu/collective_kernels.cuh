// Device-side pieces shared by the collectives' kernels (collective_kernels.cu and
// one_shot_all_reduce.cu). CUDA sources only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mirrorlab::vgpu {

inline constexpr int kCollectiveThreads = 256;

// How many elements of p come before its first 16-byte boundary (0..3), at most n: the scalar
// head after which float4 accesses are aligned.
__host__ __device__ inline std::size_t head_elements(const float* p, std::size_t n) {
  const auto misaligned = static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(p) & 15u) / 4);
  const std::size_t head = misaligned ? 4 - misaligned : 0;
  return head < n ? head : n;
}

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
