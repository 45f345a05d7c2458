#include <pybind11/pybind11.h>

#include "python/bindings/bindings.h"

PYBIND11_MODULE(_mirrorlab, m) {
  m.doc() = "mirrorlab's core, for the Python package mirrorlab (import mirrorlab, not this)";
  mirrorlab::python::bind_devices(m);
  mirrorlab::python::bind_data(m);
  mirrorlab::python::bind_training(m);
  mirrorlab::python::bind_custom_loop(m);
  mirrorlab::python::bind_workers(m);
  mirrorlab::python::bind_window(m);
}
