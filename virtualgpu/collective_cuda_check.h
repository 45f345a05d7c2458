// MIRRORLAB_COLLECTIVE_CUDA_CHECK(expr): every CUDA runtime call of the collectives goes through
// it. A failure throws std::runtime_error naming the call, file:line and CUDA's own words, e.g.
//   cudaMemcpyAsync(...) failed at virtualgpu/cuda_transport.cpp:80: invalid argument
//   (cudaErrorInvalidValue)
// A kernel launch is followed by MIRRORLAB_COLLECTIVE_CUDA_CHECK(cudaGetLastError()).
// Only for files built with CUDA. (Folds into the devices' MIRRORLAB_CUDA_CHECK once that is on
// main: same contract.)
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace mirrorlab::vgpu {

[[noreturn]] inline void throw_collective_cuda_error(cudaError_t error, const char* expression,
                                                     const char* file, int line) {
  throw std::runtime_error(std::string(expression) + " failed at " + file + ":" +
                           std::to_string(line) + ": " + cudaGetErrorString(error) + " (" +
                           cudaGetErrorName(error) + ")");
}

}  // namespace mirrorlab::vgpu

#define MIRRORLAB_COLLECTIVE_CUDA_CHECK(expr)                                             \
  do {                                                                                    \
    const cudaError_t mirrorlab_collective_status_ = (expr);                              \
    if (mirrorlab_collective_status_ != cudaSuccess) {                                    \
      ::mirrorlab::vgpu::throw_collective_cuda_error(mirrorlab_collective_status_, #expr, \
                                                     __FILE__, __LINE__);                 \
    }                                                                                     \
  } while (0)
