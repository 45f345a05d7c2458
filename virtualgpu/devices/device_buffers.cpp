#include "virtualgpu/devices/device_buffers.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/process_cuda_api.h"

namespace mirrorlab::vgpu {
namespace {

void check_sizes(std::size_t a, std::size_t b) {
  if (a != b) {
    throw std::invalid_argument("buffer of " + std::to_string(a) + " values but " +
                                std::to_string(b) + " given");
  }
}

std::invalid_argument no_cuda() {
  return std::invalid_argument(no_cuda_error("this device's memory is CUDA memory"));
}

// The CudaApi of a device whose memory is not host memory.
CudaApi& api_of(const Device& device) {
  if (device.cuda_api() == nullptr) throw no_cuda();
  return *device.cuda_api();
}

}  // namespace

void write_buffer(Device& device, std::span<float> dst, std::span<const float> values) {
  check_sizes(dst.size(), values.size());
  if (device.memory().host_accessible()) {
    std::copy(values.begin(), values.end(), dst.begin());
    return;
  }
  // On the device's stream, after its queued work; synchronous for the caller.
  CudaApi& api = api_of(device);
  CurrentGpu gpu(api, device.cuda_ordinal());
  api.copy_async(dst.data(), values.data(), values.size_bytes(), CopyKind::kHostToDevice,
                 device.cuda_stream());
  api.synchronize_stream(device.cuda_stream());
}

void read_buffer(Device& device, std::span<const float> src, std::span<float> out) {
  check_sizes(src.size(), out.size());
  if (device.memory().host_accessible()) {
    std::copy(src.begin(), src.end(), out.begin());
    return;
  }
  CudaApi& api = api_of(device);
  CurrentGpu gpu(api, device.cuda_ordinal());
  api.copy_async(out.data(), src.data(), src.size_bytes(), CopyKind::kDeviceToHost,
                 device.cuda_stream());
  api.synchronize_stream(device.cuda_stream());
}

int visible_cuda_gpus(std::string* reason) {
  const GpuInventory inventory = enumerate_gpus();  // never throws; says why when there is none
  if (inventory.gpus.empty()) *reason = inventory.unavailable_reason;
  return static_cast<int>(inventory.gpus.size());
}

}  // namespace mirrorlab::vgpu
