// Device configuration, as tf.config.set_logical_device_configuration does it.
#include <gtest/gtest.h>

#include <string>

#include "virtualgpu/device_registry.h"

namespace mirrorlab::vgpu {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigurationError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceRegistry, DefaultIsOneDevice) {
  DeviceRegistry registry;
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]->name(), "/gpu:0");
  EXPECT_EQ(devices[0]->kind(), DeviceKind::kCpuVirtualGpu);
}

TEST(DeviceRegistry, NDevicesWithNamesAndLimits) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 256);
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(devices[i]->name(), "/gpu:" + std::to_string(i));
    EXPECT_EQ(devices[i]->index(), i);
    EXPECT_EQ(devices[i]->memory().limit(), 256 * kMiB);
    EXPECT_EQ(devices[i]->memory().device_name(), devices[i]->name());
  }
}

TEST(DeviceRegistry, ListOfLimits) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration({{1024}, {512}});
  const auto& devices = registry.logical_devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->memory().limit(), 1024 * kMiB);
  EXPECT_EQ(devices[1]->memory().limit(), 512 * kMiB);
}

TEST(DeviceRegistry, RejectsBadConfigurations) {
  DeviceRegistry registry;
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration(0, 1024); }).find("at least 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration(65, 1024); }).find("at most 64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration(2, 0); }).find("0 MiB"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.set_logical_device_configuration({}); }).find("at least 1"),
            std::string::npos);
  // Rejected configurations change nothing.
  EXPECT_EQ(registry.configuration().size(), 1u);
  EXPECT_FALSE(registry.initialized());
}

TEST(DeviceRegistry, FrozenOnceInUse) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 128);
  registry.logical_devices();
  const std::string msg = error_of([&] { registry.set_logical_device_configuration(4, 128); });
  EXPECT_NE(msg.find("cannot be modified after being initialized"), std::string::npos) << msg;
  EXPECT_EQ(registry.logical_devices().size(), 2u);
}

TEST(DeviceRegistry, DeviceStreamsAreNamedAfterTheDevice) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 16);
  EXPECT_EQ(registry.logical_devices()[1]->stream().name(), "/gpu:1");
  EXPECT_STREQ(to_string(DeviceKind::kCpuVirtualGpu), "CPU-backed virtual GPU");
}

}  // namespace
}  // namespace mirrorlab::vgpu
