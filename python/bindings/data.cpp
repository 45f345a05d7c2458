// Fashion-MNIST as Keras' load_data() gives it: NumPy arrays of bytes, owned by Python (the
// loaded vectors are moved into them, not copied).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/io/dataset.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace mirrorlab::python {
namespace {

// `bytes` as an array of `shape`, which owns them from now on.
py::array_t<std::uint8_t> owned_array(std::vector<std::uint8_t>&& bytes,
                                      std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<std::uint8_t>(std::move(bytes));
  py::capsule free_when_done(owner,
                             [](void* p) { delete static_cast<std::vector<std::uint8_t>*>(p); });
  return py::array_t<std::uint8_t>(std::move(shape), owner->data(), free_when_done);
}

py::tuple as_arrays(core::Dataset&& d) {
  const auto n = static_cast<py::ssize_t>(d.size());
  py::array_t<std::uint8_t> images = owned_array(std::move(d.images), {n, d.rows, d.cols});
  py::array_t<std::uint8_t> labels = owned_array(std::move(d.labels), {n});
  return py::make_tuple(images, labels);
}

}  // namespace

void bind_data(py::module_& m) {
  m.attr("_default_fashion_mnist_dir") = core::kDefaultFashionMnistDir;
  m.def("_load_fashion_mnist", [](const std::string& dir) {
    core::FashionMnist data;
    try {
      py::gil_scoped_release reading;
      data = core::load_fashion_mnist(dir);
    } catch (const core::DataError& e) {
      PyErr_SetString(e.missing() ? PyExc_FileNotFoundError : PyExc_ValueError, e.what());
      throw py::error_already_set();
    }
    return py::make_tuple(as_arrays(std::move(data.train)), as_arrays(std::move(data.test)));
  });
}

}  // namespace mirrorlab::python
