// Minimal CUDA devices for tests: a vgpu::Device on GPU 0 whose arena takes its blocks from
// cudaMalloc, with a CUDA stream of its own. Enough to run CudaOps and a MirroredStrategy on
// logical GPUs carved from one card.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "virtualgpu/device.h"

namespace mirrorlab::testing {

class CudaTestDevices {
 public:
  // `count` logical GPUs on GPU 0, `limit_mib` each. Throws std::runtime_error when the build
  // has no CUDA or no GPU is visible (callers check core::cuda_device_visible first).
  CudaTestDevices(int count, std::size_t limit_mib);
  ~CudaTestDevices();
  CudaTestDevices(const CudaTestDevices&) = delete;
  CudaTestDevices& operator=(const CudaTestDevices&) = delete;

  const std::vector<vgpu::Device*>& devices() const { return devices_; }

 private:
  std::vector<std::unique_ptr<vgpu::Device>> owned_;
  std::vector<vgpu::Device*> devices_;
  std::vector<void*> streams_;  // cudaStream_t, destroyed after the devices
};

}  // namespace mirrorlab::testing
