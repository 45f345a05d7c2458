// cuda_runtime.h with the CUDA runtime: errors, enumeration, threads and peers. The
// allocator and the devices' streams are written over a CudaApi (cuda_allocator.cpp,
// cuda_executions.cpp); the CudaApi of the runtime is cuda_api_runtime.cpp. Host code only (no
// kernels), so it is compiled by the C++ compiler against cudart.
//
// Sections: errors | enumeration | threads and peers
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
  return "built with CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10);
}

// ----------------------------------------------------------------------------- enumeration ---

std::size_t gpu_free_bytes(int ordinal) {
  CurrentGpuGuard guard(ordinal);
  std::size_t free = 0, total = 0;
  MIRRORLAB_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

GpuInventory enumerate_gpus() {
  GpuInventory inventory;
  inventory.cuda_built = true;
  // Both work without a driver: the runtime's version is built in, the driver's is 0 then.
  (void)cudaRuntimeGetVersion(&inventory.runtime_version);
  (void)cudaDriverGetVersion(&inventory.driver_version);
  // With no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver and leaves the count
  // untouched: it starts at 0.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    inventory.unavailable_reason =
        "no CUDA GPU visible (cudaGetDeviceCount: " + cuda_error_text(status) + ")";
    return inventory;
  }
  if (count == 0) {
    inventory.unavailable_reason = "no CUDA GPU visible (cudaGetDeviceCount found none)";
    return inventory;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    MIRRORLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    PhysicalGpu gpu;
    gpu.ordinal = i;
    gpu.name = prop.name;
    gpu.total_bytes = prop.totalGlobalMem;
    gpu.free_bytes = gpu_free_bytes(i);
    gpu.sm_count = prop.multiProcessorCount;
    gpu.compute_major = prop.major;
    gpu.compute_minor = prop.minor;
    inventory.gpus.push_back(gpu);
  }
  inventory.peer_access.assign(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int can = 0;
      MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
      inventory.peer_access[i][j] = can != 0;
    }
  }
  return inventory;
}

// ----------------------------------------------------------------------- threads and peers ---

void enable_peer_access(const std::vector<int>& ordinals) {
  for (int from : ordinals) {
    CurrentGpuGuard guard(from);
    for (int to : ordinals) {
      if (to == from) continue;
      int can = 0;
      MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
      if (can == 0) continue;  // copies between them go through the host instead
      const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        continue;
      }
      MIRRORLAB_CUDA_CHECK(status);
    }
  }
}

}  // namespace mirrorlab::vgpu
