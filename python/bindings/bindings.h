// The C++ half of the Python module `mirrorlab` (python/mirrorlab/ is the other half): what the
// package's Python classes call, each name with a leading underscore. Users call the Python
// classes, which speak TensorFlow's names and raise its exceptions; this half only turns the
// core's types into Python's and back.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "core/session/training_session.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::python {

// The process's devices, configured once as TensorFlow's are (tf.config): every strategy of
// the process uses these.
vgpu::DeviceRegistry& registry();

// The strategy of a model's run (a _Run, training.cpp), for the custom loop's steps; throws
// std::logic_error (RuntimeError) naming `what` while that model's fit or evaluate runs on
// another thread.
core::MirroredStrategy& strategy_of(pybind11::handle run, const std::string& what);
// The session a window watches that run through (made at the first call: training.cpp).
core::TrainingSession& watching_session_of(pybind11::handle run);
// A custom loop's step of `batch_per_replica` on that run: a window opened on it later shows that
// batch, as after a fit (training.cpp).
void note_step_batch(pybind11::handle run, std::size_t batch_per_replica);
// custom_loop.cpp: a StepByStep held between its phases holds every device (their streams).
// check_devices_free throws std::logic_error (RuntimeError) saying so, `what` ("model.fit") being
// what cannot run meanwhile; end_strategy ends a model's strategy, once such a step has ended
// (its end waits for the devices' streams).
void check_devices_free(const std::string& what);
void end_strategy(std::unique_ptr<core::MirroredStrategy> strategy);
// The worker group of a _Workers (workers.cpp); nullptr for None.
vgpu::WorkerGroup* worker_group_of(pybind11::handle workers);

void bind_devices(pybind11::module_& m);      // devices.cpp
void bind_data(pybind11::module_& m);         // data.cpp
void bind_training(pybind11::module_& m);     // training.cpp
void bind_custom_loop(pybind11::module_& m);  // custom_loop.cpp
void bind_workers(pybind11::module_& m);      // workers.cpp
void bind_window(pybind11::module_& m);       // gui_window.cpp (gui_window_absent.cpp)

}  // namespace mirrorlab::python
