// MIRRORLAB_HD marks a function that runs on both sides: `__host__ __device__` under nvcc, nothing
// for the C++ compiler. The CUDA kernels' work per element is written once as such functions
// (core/nn/kernel_elements*.h, virtualgpu/devices/collective_elements.h): the `__global__` kernels
// are grid-stride loops that call them, and the tests call the same functions on the CPU over every
// index, in every build, against the CPU references. So what only a GPU can check is the loop,
// the launch and the hardware's own arithmetic (nvcc contracts a*b + c into one fused
// multiply-add on the GPU; the host compiler, without -mfma, does not).
#pragma once

#if defined(__CUDACC__)
#define MIRRORLAB_HD __host__ __device__
#else
#define MIRRORLAB_HD
#endif

// `#pragma unroll` for nvcc's device pass; nothing elsewhere (g++ would warn about it).
#if defined(__CUDA_ARCH__)
#define MIRRORLAB_UNROLL _Pragma("unroll")
#else
#define MIRRORLAB_UNROLL
#endif
