// mirrorlab.gui.watch where the module was built without the window (MIRRORLAB_PYTHON_NO_WINDOW
// says why): the package says so instead of opening one.
#include <pybind11/pybind11.h>

#include "python/bindings/bindings.h"

namespace mirrorlab::python {

void bind_window(pybind11::module_& m) {
  m.attr("_has_window") = false;
  m.attr("_no_window_why") = MIRRORLAB_PYTHON_NO_WINDOW;
}

}  // namespace mirrorlab::python
