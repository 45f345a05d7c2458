#include "gui/model/advice.h"

#include "core/strategy/divergence.h"
#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::gui {

std::string advice(const std::exception& error, const core::SessionConfig& config) {
  const bool mlp = config.settings.model == core::ModelKind::kMlp;
  if (const auto* e = dynamic_cast<const vgpu::OutOfMemoryError*>(&error)) {
    switch (e->ran_out()) {
      case vgpu::MemoryRanOut::kLimit:
        return "Raise the memory limit of " + e->device() + ", lower the batch per replica" +
               (mlp ? "" : ", or choose the smaller MLP model") + ", then press Apply.";
      case vgpu::MemoryRanOut::kHost:
        return "Lower the memory limits or use fewer virtual GPUs, lower the batch per replica, "
               "or close other programs, then press Apply.";
      case vgpu::MemoryRanOut::kDevice:
        return "Lower the memory limits or the batch per replica, then press Apply.";
      case vgpu::MemoryRanOut::kGpu:
        return "Close other programs using the card, or lower the memory limits so that "
               "together they fit in its free memory, then press Apply.";
    }
  }
  if (const auto* e = dynamic_cast<const vgpu::ConfigurationError*>(&error)) {
    switch (e->subject()) {
      case vgpu::ConfigurationSubject::kMemoryLimit:
        return "Lower the memory limits below, or use fewer virtual GPUs, then press Apply.";
      case vgpu::ConfigurationSubject::kDeviceCount:
        return "Choose another number of virtual GPUs, then press Apply.";
      default:
        break;
    }
  }
  if (dynamic_cast<const core::DivergedError*>(&error) != nullptr) {
    return "The step was too large: lower the learning rate or raise the batch per replica "
           "below (or choose Adam), then press Apply.";
  }
  return "Change the settings below and press Apply.";
}

std::string advice(const std::exception_ptr& error, const core::SessionConfig& config) {
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return advice(e, config);
  } catch (...) {
  }
  return "Change the settings below and press Apply.";
}

}  // namespace mirrorlab::gui
