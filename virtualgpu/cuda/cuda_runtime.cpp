// cuda_runtime.h with the CUDA runtime: its errors and the current-GPU guard. Enumeration, peers
// (gpu_inventory.cpp), the allocator and the devices' streams (cuda_allocator.cpp,
// cuda_executions.cpp) are written over a CudaApi; the CudaApi of the runtime is
// cuda_api_runtime.cpp. Host code only (no kernels), so it is compiled by the C++ compiler
// against cudart.
#include "virtualgpu/cuda/cuda_runtime.h"

#include <string>

#include "virtualgpu/cuda/cuda_check.h"

namespace mirrorlab::vgpu {

// ---------------------------------------------------------------------------------- errors ---

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")";
}

void throw_cuda_error(cudaError_t error, const char* expression, const char* file, int line) {
  // A failed call can leave its error as the thread's "last error"; clear it so the next
  // cudaGetLastError() after a kernel launch reports that launch, not this call.
  (void)cudaGetLastError();
  throw CudaError(static_cast<int>(error), std::string(expression) + " failed at " + file + ":" +
                                               std::to_string(line) + ": " +
                                               cuda_error_text(error));
}

CurrentGpuGuard::CurrentGpuGuard(int ordinal) {
  MIRRORLAB_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != ordinal) {
    MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal));
    changed_ = true;
  }
}

CurrentGpuGuard::~CurrentGpuGuard() {
  if (changed_) (void)cudaSetDevice(previous_);  // previous_ was valid a moment ago
}

bool cuda_built() { return true; }

// With CUDA in the build only a device made without a CudaApi (a programming error) gets here.
std::string no_cuda_error(std::string_view what) {
  return std::string(what) + ", but it was made without a CUDA runtime (no CudaApi)";
}

std::string cuda_build_description() {
  return "built with CUDA " + cuda_version_text(CUDART_VERSION);
}

}  // namespace mirrorlab::vgpu
