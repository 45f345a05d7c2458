// CUDA devices for tests, made the way `mirrorlab --backend cuda` makes them (a DeviceRegistry):
// logical GPUs carved from one card, each its own capped cudaMalloc arena and non-blocking
// stream, or one device per listed physical GPU. And the skip every CUDA test starts with.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"
#include "virtualgpu/devices/device_registry.h"

// Skips the test, saying why, unless `n` CUDA GPUs are visible (none in a build without CUDA).
#define MIRRORLAB_REQUIRE_CUDA_GPUS(n)                                                         \
  do {                                                                                         \
    std::string reason_;                                                                       \
    const int gpus_ = ::mirrorlab::vgpu::visible_cuda_gpus(&reason_);                          \
    if (gpus_ == 0) GTEST_SKIP() << reason_;                                                   \
    if (gpus_ < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA GPUs, " << gpus_ << " visible"; \
  } while (0)

namespace mirrorlab::testing {

class CudaTestDevices {
 public:
  // Logical GPUs on the card of ordinals[0], one per entry (kCudaLogicalGpu), or one device per
  // listed physical GPU (kCudaPhysicalGpu); `mib` each. Throws as the registry does (no GPU, no
  // CUDA in the build, not enough memory on the card).
  CudaTestDevices(const std::vector<int>& ordinals, vgpu::DeviceKind kind, std::size_t mib = 256) {
    if (kind == vgpu::DeviceKind::kCudaPhysicalGpu) {
      registry_.set_physical_device_configuration(ordinals, mib);
    } else {
      registry_.set_logical_device_configuration(
          ordinals[0], std::vector<vgpu::LogicalDeviceConfiguration>(ordinals.size(), {mib}));
    }
    registry_.logical_devices();  // made now, so a test fails here if they cannot be
  }
  // `count` logical GPUs on GPU 0, `mib` each.
  CudaTestDevices(int count, std::size_t mib)
      : CudaTestDevices(std::vector<int>(static_cast<std::size_t>(count), 0),
                        vgpu::DeviceKind::kCudaLogicalGpu, mib) {}

  const std::vector<vgpu::Device*>& devices() { return registry_.logical_devices(); }

 private:
  vgpu::DeviceRegistry registry_;
};

}  // namespace mirrorlab::testing
