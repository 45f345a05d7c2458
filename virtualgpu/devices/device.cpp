#include "virtualgpu/devices/device.h"

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_event_pool.h"

namespace mirrorlab::vgpu {

const char* to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpuVirtualGpu:
      return "CPU-backed virtual GPU";
    case DeviceKind::kCudaPhysicalGpu:
      return "physical GPU";
    case DeviceKind::kCudaLogicalGpu:
      return "logical GPU";
  }
  return "device";
}

Device::Device(int index, DeviceKind kind, std::size_t memory_limit_bytes)
    : index_(index),
      name_("/gpu:" + std::to_string(index)),
      kind_(kind),
      memory_(name_, memory_limit_bytes),
      stream_(name_) {}

Device::Device(int index, DeviceKind kind, std::size_t memory_limit_bytes,
               std::unique_ptr<BlockAllocator> allocator, int cuda_ordinal, void* cuda_stream,
               CudaApi* cuda_api)
    : index_(index),
      name_("/gpu:" + std::to_string(index)),
      kind_(kind),
      cuda_ordinal_(cuda_ordinal),
      cuda_stream_(cuda_stream),
      cuda_api_(cuda_api),
      cuda_events_(cuda_api != nullptr && cuda_ordinal >= 0
                       ? std::make_unique<CudaEventPool>(*cuda_api, cuda_ordinal)
                       : nullptr),
      memory_(name_, memory_limit_bytes, std::move(allocator)),
      stream_(name_) {}

Device::~Device() = default;

void* Device::communication_cuda_stream() {
  if (cuda_api_ == nullptr || cuda_ordinal_ < 0) return nullptr;
  std::lock_guard lock(communication_mutex_);
  if (communication_.stream == nullptr) {
    CurrentGpu gpu(*cuda_api_, cuda_ordinal_);
    communication_.stream = cuda_api_->create_stream();
    communication_.api = cuda_api_;
    communication_.ordinal = cuda_ordinal_;
  }
  return communication_.stream;
}

Device::OwnedCudaStream::~OwnedCudaStream() {
  if (stream == nullptr) return;
  try {
    CurrentGpu gpu(*api, ordinal);
    api->destroy_stream(stream);
  } catch (...) {
    // A device being destroyed cannot report a failing driver; its memory goes with the process.
  }
}

}  // namespace mirrorlab::vgpu
