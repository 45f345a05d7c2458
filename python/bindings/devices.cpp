// tf.config's calls over the process's device registry.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "python/bindings/bindings.h"
#include "virtualgpu/cuda/configuration_error.h"

namespace py = pybind11;

namespace mirrorlab::python {

vgpu::DeviceRegistry& registry() {
  // Never destroyed: the interpreter may end while a strategy of it is still referenced, and
  // the devices' threads must not be joined from a static destructor after Python has gone.
  static auto* devices = new vgpu::DeviceRegistry();
  return *devices;
}

namespace {

std::vector<vgpu::LogicalDeviceConfiguration> configs_of(const std::vector<std::int64_t>& mib) {
  std::vector<vgpu::LogicalDeviceConfiguration> configs;
  for (std::int64_t limit : mib) {
    if (limit < 1) {
      throw py::value_error("memory_limit " + std::to_string(limit) +
                            ": give a number of MiB of at least 1, or None for 1024");
    }
    configs.push_back({static_cast<std::size_t>(limit)});
  }
  return configs;
}

// TensorFlow's error once devices are in use, and a ValueError for a configuration the devices
// cannot have; otherwise `configure` changes the registry.
template <class Configure>
void reconfigure(Configure&& configure) {
  if (registry().initialized()) {
    throw std::runtime_error("Virtual devices cannot be modified after being initialized");
  }
  try {
    configure(registry());
  } catch (const vgpu::ConfigurationError& e) {
    throw py::value_error(e.what());
  }
}

}  // namespace

void bind_devices(py::module_& m) {
  m.def("_physical_devices", [] {
    std::vector<std::tuple<std::string, std::string>> out;
    for (const vgpu::PhysicalDevice& d : registry().list_physical_devices()) {
      out.emplace_back(d.name, d.device_type);
    }
    return out;
  });
  m.def("_configure_virtual_gpus", [](const std::vector<std::int64_t>& memory_limits_mib) {
    reconfigure([&](vgpu::DeviceRegistry& r) {
      r.set_logical_device_configuration(configs_of(memory_limits_mib));
    });
  });
  m.def("_configure_logical_gpus",
        [](int physical_gpu, const std::vector<std::int64_t>& memory_limits_mib) {
          reconfigure([&](vgpu::DeviceRegistry& r) {
            r.set_logical_device_configuration(physical_gpu, configs_of(memory_limits_mib));
          });
        });
  m.def("_initialized", [] { return registry().initialized(); });
  // Makes the devices (which freezes the configuration): for each, its name ("/gpu:0") and
  // whether it is a CUDA device; then the line that says what they are.
  m.def("_logical_devices", [] {
    std::vector<std::tuple<std::string, bool>> out;
    try {
      for (const vgpu::Device* d : registry().logical_devices()) {
        out.emplace_back(d->name(), d->is_cuda());
      }
    } catch (const vgpu::ConfigurationError& e) {
      throw py::value_error(e.what());
    }
    return std::make_tuple(out, registry().description());
  });
}

}  // namespace mirrorlab::python
