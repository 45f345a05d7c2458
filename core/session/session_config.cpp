#include "core/session/session_config.h"

namespace mirrorlab::core {

std::vector<vgpu::LogicalDeviceConfiguration> session_devices(const SessionConfig& config) {
  return logical_devices(config.settings.devices);
}

SessionConfig config_for_checkpoint(const Checkpoint& c, SessionConfig current) {
  // What the checkpoint fixed, its schedule and its all-reduce; the devices, the workers and the
  // data (the window's, loaded once) stay this session's.
  const std::size_t train_examples = current.settings.train_examples;
  copy_settings(c.config.settings, current.settings, [](const SettingInfo& info) {
    return info.role == SettingRole::kFixed || info.role == SettingRole::kChangeable;
  });
  current.settings.train_examples = train_examples;
  current.resume.reset();
  return current;
}

}  // namespace mirrorlab::core
