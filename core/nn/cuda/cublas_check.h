// MIRRORLAB_CUBLAS_CHECK(expr): every cuBLAS call in core/ goes through it; a failure throws
// vgpu::CudaError naming the call, file:line and cuBLAS's own words, as MIRRORLAB_CUDA_CHECK
// (virtualgpu/cuda/cuda_check.h, included here) does for the CUDA runtime: one error type and one
// CUDA macro for the whole project, and this one check for the library only core/ uses. Only for
// files built with CUDA.
#pragma once

#include <cublas_v2.h>

#include "virtualgpu/cuda/cuda_check.h"

namespace mirrorlab::core {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expression,
                                     const char* file, int line);

}  // namespace mirrorlab::core

#define MIRRORLAB_CUBLAS_CHECK(expr)                                                              \
  do {                                                                                            \
    const cublasStatus_t mirrorlab_cublas_status_ = (expr);                                       \
    if (mirrorlab_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                      \
      ::mirrorlab::core::throw_cublas_error(mirrorlab_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                             \
  } while (0)
