// The C++ half of the Python module `mirrorlab` (python/mirrorlab/ is the other half): what the
// package's Python classes call, each name with a leading underscore. Users call the Python
// classes, which speak TensorFlow's names and raise its exceptions; this half only turns the
// core's types into Python's and back.
#pragma once

#include <pybind11/pybind11.h>

#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::python {

// The process's devices, configured once as TensorFlow's are (tf.config): every strategy of
// the process uses these.
vgpu::DeviceRegistry& registry();

// The strategy of a model's run (a _Run, training.cpp), for the custom loop's steps.
core::MirroredStrategy& strategy_of(pybind11::handle run);
// The worker group of a _Workers (workers.cpp); nullptr for None.
vgpu::WorkerGroup* worker_group_of(pybind11::handle workers);

void bind_devices(pybind11::module_& m);      // devices.cpp
void bind_data(pybind11::module_& m);         // data.cpp
void bind_training(pybind11::module_& m);     // training.cpp
void bind_custom_loop(pybind11::module_& m);  // custom_loop.cpp
void bind_workers(pybind11::module_& m);      // workers.cpp

}  // namespace mirrorlab::python
