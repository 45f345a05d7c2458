// The process as one worker of several (the package's MultiWorkerMirroredStrategy): the MPI ranks
// mpirun started, as `mpirun -np W mirrorlab train` makes them (virtualgpu/mpi). Where the build
// has no MPI, the launch is still read (from the environment), to say what is missing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

#include "python/bindings/bindings.h"
#include "virtualgpu/workers/worker_group.h"
#ifndef MIRRORLAB_HAVE_MPI  // defined by mirrorlab_mpi, linked where the build has MPI
#define MIRRORLAB_HAVE_MPI 0
#endif
#if MIRRORLAB_HAVE_MPI
#include "virtualgpu/mpi/mpi_worker_group.h"
#endif

namespace py = pybind11;

namespace mirrorlab::python {
namespace {

// This process's worker group, made once (collective: every worker makes it at the same point).
class Workers {
 public:
  explicit Workers(double timeout_seconds) {
#if MIRRORLAB_HAVE_MPI
    const auto timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1e3));
    py::gil_scoped_release starting;
    group_ = std::make_unique<vgpu::MpiWorkerGroup>(timeout, [](const vgpu::WorkerLoss& loss) {
      // On the watch's thread, while this worker may be blocked in MPI for ever: say it, leave.
      std::fflush(stdout);
      std::fprintf(stderr, "\nmirrorlab: error: %s\n", loss.sentence.c_str());
      std::fflush(stderr);
      _exit(1);
    });
#else
    (void)timeout_seconds;
    throw std::runtime_error(
        "this mirrorlab was built without MPI, which its workers need: apt-get install "
        "libopenmpi-dev openmpi-bin, then build it again");
#endif
  }

  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  std::string tf_config(int rank) const { return vgpu::tf_config(*group_, rank); }
  std::string transport() const { return group_->transport(); }
  // The sum of `values` over every worker (each gives as many).
  py::array_t<double> all_reduce_sum(py::array_t<double, py::array::c_style> values) {
    py::array_t<double> out(values.size());
    std::copy(values.data(), values.data() + values.size(), out.mutable_data());
    std::span<double> span(out.mutable_data(), static_cast<std::size_t>(out.size()));
    py::gil_scoped_release exchanging;
    group_->all_reduce_sum(span);
    return out;
  }
  // The last barriers, then MPI's end: at the interpreter's exit, on every worker; once (MPI
  // cannot be used after its end).
  void finish() {
#if MIRRORLAB_HAVE_MPI
    if (finished_) return;
    finished_ = true;
    py::gil_scoped_release finishing;
    if (auto* mpi = dynamic_cast<vgpu::MpiWorkerGroup*>(group_.get())) mpi->finish();
    vgpu::finalize_mpi();
#endif
  }
  vgpu::WorkerGroup* group() { return group_.get(); }

 private:
  std::unique_ptr<vgpu::WorkerGroup> group_;
  bool finished_ = false;
};

}  // namespace

vgpu::WorkerGroup* worker_group_of(py::handle workers) {
  if (workers.is_none()) return nullptr;
  return workers.cast<Workers&>().group();
}

void bind_workers(py::module_& m) {
  m.def("_launched_by", [] {
    const vgpu::Launch launch = vgpu::launched_by();
    return std::make_tuple(launch.world_size, launch.rank, launch.launcher);
  });
  m.attr("_has_mpi") = static_cast<bool>(MIRRORLAB_HAVE_MPI);
  py::class_<Workers, std::shared_ptr<Workers>>(m, "_Workers")
      .def(py::init<double>(), py::arg("timeout_seconds"))
      .def_property_readonly("rank", &Workers::rank)
      .def_property_readonly("size", &Workers::size)
      .def("tf_config", &Workers::tf_config, py::arg("rank"))
      .def("transport", &Workers::transport)
      .def("all_reduce_sum", &Workers::all_reduce_sum, py::arg("values"))
      .def("finish", &Workers::finish);
}

}  // namespace mirrorlab::python
