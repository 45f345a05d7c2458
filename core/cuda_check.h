// MIRRORLAB_CUDA_CHECK(expr) / MIRRORLAB_CUBLAS_CHECK(expr): every CUDA runtime and cuBLAS call in
// core/ goes through one of them; a failure throws std::runtime_error naming the call, file:line
// and CUDA's own words. After each kernel launch, MIRRORLAB_CUDA_CHECK_LAUNCH() reads
// cudaGetLastError (a launch reports its errors only there). Only for files built with CUDA.
//
// The CUDA devices (virtualgpu/cuda_check.h, another branch) define the same two CUDA macros;
// when both are on main, this header keeps only the cuBLAS one and includes theirs.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace mirrorlab::core {

[[noreturn]] void throw_cuda_failure(cudaError_t error, const char* expression, const char* file,
                                     int line);
[[noreturn]] void throw_cublas_failure(cublasStatus_t status, const char* expression,
                                       const char* file, int line);

}  // namespace mirrorlab::core

#ifndef MIRRORLAB_CUDA_CHECK
#define MIRRORLAB_CUDA_CHECK(expr)                                                              \
  do {                                                                                          \
    const cudaError_t mirrorlab_cuda_status_ = (expr);                                          \
    if (mirrorlab_cuda_status_ != cudaSuccess) {                                                \
      ::mirrorlab::core::throw_cuda_failure(mirrorlab_cuda_status_, #expr, __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)
#define MIRRORLAB_CUDA_CHECK_LAUNCH() MIRRORLAB_CUDA_CHECK(cudaGetLastError())
#endif

#define MIRRORLAB_CUBLAS_CHECK(expr)                                                     \
  do {                                                                                   \
    const cublasStatus_t mirrorlab_cublas_status_ = (expr);                              \
    if (mirrorlab_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                             \
      ::mirrorlab::core::throw_cublas_failure(mirrorlab_cublas_status_, #expr, __FILE__, \
                                              __LINE__);                                 \
    }                                                                                    \
  } while (0)
