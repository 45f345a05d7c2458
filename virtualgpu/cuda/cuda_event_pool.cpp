#include "virtualgpu/cuda/cuda_event_pool.h"

namespace mirrorlab::vgpu {

CudaEventPool::~CudaEventPool() {
  for (GpuEvent e : free_) api_.destroy_event(e);
}

GpuEvent CudaEventPool::take() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      GpuEvent e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  CurrentGpu gpu(api_, ordinal_);
  GpuEvent e = api_.create_event();
  std::lock_guard lock(mutex_);
  ++made_;
  return e;
}

void CudaEventPool::give_back(GpuEvent event) {
  std::lock_guard lock(mutex_);
  free_.push_back(event);
}

int CudaEventPool::made() const {
  std::lock_guard lock(mutex_);
  return made_;
}

}  // namespace mirrorlab::vgpu
