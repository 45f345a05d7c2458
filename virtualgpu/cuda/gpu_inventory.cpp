#include "virtualgpu/cuda/gpu_inventory.h"

#include <string>

namespace mirrorlab::vgpu {

GpuInventory enumerate_gpus(CudaApi& api) {
  GpuInventory inventory;
  inventory.cuda_built = cuda_built();
  inventory.runtime_version = api.runtime_version();
  inventory.driver_version = api.driver_version();
  std::string why_none;
  const int count = api.gpu_count(&why_none);
  if (count <= 0) {
    std::string why = why_none.empty() ? std::string("none found") : why_none;
    // cudaDriverGetVersion gives 0 where no driver is installed.
    if (inventory.driver_version == 0) {
      why = "no NVIDIA driver is installed; " + why;
    } else if (inventory.driver_version / 1000 < inventory.runtime_version / 1000) {
      // An older driver of the runtime's major version runs it (CUDA's minor version
      // compatibility); one of an older major version does not.
      why = "the NVIDIA driver supports CUDA " + cuda_version_text(inventory.driver_version) +
            ", older than this build's CUDA " + cuda_version_text(inventory.runtime_version) +
            " runtime: install a newer driver; " + why;
    }
    inventory.unavailable_reason = "no CUDA GPU visible (" + why + ")";
    return inventory;
  }
  for (int i = 0; i < count; ++i) {
    PhysicalGpu gpu = api.gpu_properties(i);
    gpu.free_bytes = gpu_free_bytes(api, i);
    inventory.gpus.push_back(gpu);
  }
  const auto n = static_cast<std::size_t>(count);
  inventory.peer_access.assign(n, std::vector<bool>(n, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i != j) {
        inventory.peer_access[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] =
            api.can_access_peer(i, j);
      }
    }
  }
  return inventory;
}

std::size_t gpu_free_bytes(CudaApi& api, int ordinal) {
  CurrentGpu current(api, ordinal);
  return api.free_bytes();
}

bool enable_peer_access(CudaApi& api, int gpu, int peer) {
  if (!api.can_access_peer(gpu, peer)) return false;
  CurrentGpu current(api, gpu);
  api.enable_peer_access(peer);
  return true;
}

void enable_peer_access(CudaApi& api, const std::vector<int>& ordinals) {
  for (const int from : ordinals) {
    for (const int to : ordinals) {
      if (to != from) enable_peer_access(api, from, to);
    }
  }
}

}  // namespace mirrorlab::vgpu
