#include "core/session/session_config.h"

namespace mirrorlab::core {

std::vector<vgpu::LogicalDeviceConfiguration> session_devices(const SessionConfig& config) {
  return logical_devices(config.settings.devices);
}

SessionConfig config_for_checkpoint(const Checkpoint& c, SessionConfig current) {
  // What the checkpoint fixed, its schedule and its all-reduce; the devices, the workers and the
  // data stay this session's.
  RunSettings settings = c.config.settings;
  settings.devices = current.settings.devices;
  settings.workers = current.settings.workers;
  settings.train_examples = current.settings.train_examples;
  current.settings = settings;
  current.resume.reset();
  return current;
}

}  // namespace mirrorlab::core
