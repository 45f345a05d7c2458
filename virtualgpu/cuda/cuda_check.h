// MIRRORLAB_CUDA_CHECK(expr): every CUDA runtime call goes through it. A failure throws
// vgpu::CudaError naming the call, file:line and CUDA's own words. Only for files built with
// CUDA (it includes the runtime header); what others see is CudaError in cuda_runtime.h.
//
//   MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   MIRRORLAB_CUDA_CHECK_LAUNCH();   // a launch reports its errors through cudaGetLastError
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace mirrorlab::vgpu {

// "cudaMalloc(&p, n) failed at virtualgpu/cuda/cuda_runtime.cpp:42: out of memory
// (cudaErrorMemoryAllocation)"
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* expression, const char* file,
                                   int line);

// CUDA's words for an error: "out of memory (cudaErrorMemoryAllocation)".
std::string cuda_error_text(cudaError_t error);

// Makes `ordinal` the calling thread's GPU for a scope and puts the caller's back after: code
// that may run on any thread (an allocator, the enumeration) must not move it to another GPU.
class CurrentGpuGuard {
 public:
  explicit CurrentGpuGuard(int ordinal);
  ~CurrentGpuGuard();
  CurrentGpuGuard(const CurrentGpuGuard&) = delete;
  CurrentGpuGuard& operator=(const CurrentGpuGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace mirrorlab::vgpu

#define MIRRORLAB_CUDA_CHECK(expr)                                                            \
  do {                                                                                        \
    const cudaError_t mirrorlab_cuda_status_ = (expr);                                        \
    if (mirrorlab_cuda_status_ != cudaSuccess) {                                              \
      ::mirrorlab::vgpu::throw_cuda_error(mirrorlab_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)

#define MIRRORLAB_CUDA_CHECK_LAUNCH() MIRRORLAB_CUDA_CHECK(cudaGetLastError())
