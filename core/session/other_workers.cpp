#include "core/session/other_workers.h"

namespace mirrorlab::core {

std::vector<DeviceStatus> device_statuses(const std::vector<vgpu::Device*>& devices) {
  std::vector<DeviceStatus> statuses;
  for (const vgpu::Device* d : devices) {
    DeviceStatus status;
    status.name = d->name();
    status.what = vgpu::to_string(d->kind());
    status.cuda_ordinal = d->cuda_ordinal();
    statuses.push_back(status);
  }
  read_memory(devices, statuses);
  return statuses;
}

void read_memory(const std::vector<vgpu::Device*>& devices, std::vector<DeviceStatus>& statuses) {
  for (std::size_t i = 0; i < devices.size() && i < statuses.size(); ++i) {
    const vgpu::MemoryArena& memory = devices[i]->memory();
    statuses[i].limit = memory.limit();
    statuses[i].in_use = memory.in_use();
    statuses[i].peak = memory.peak();
  }
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace mirrorlab::core
