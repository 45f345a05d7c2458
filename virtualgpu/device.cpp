#include "virtualgpu/device.h"

namespace mirrorlab::vgpu {

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpuVirtualGpu: return "CPU-backed virtual GPU";
    case DeviceKind::kCudaPhysicalGpu: return "physical GPU";
    case DeviceKind::kCudaLogicalGpu: return "logical GPU";
  }
  return "device";
}

Device::Device(int index, DeviceKind kind, std::size_t memory_limit_bytes)
    : index_(index),
      name_("/gpu:" + std::to_string(index)),
      kind_(kind),
      memory_(name_, memory_limit_bytes),
      stream_(name_) {}

}  // namespace mirrorlab::vgpu
