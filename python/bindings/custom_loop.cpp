// The custom loop's core half: a data set held once by the core (_Data), the split of a global
// batch among the replicas, and one training step driven phase by phase (_StepByStep, over
// core/session/step_by_step.h), whose replicas' values come back as NumPy arrays. The GIL is
// released while the replicas compute.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/io/dataset.h"
#include "core/session/step_by_step.h"
#include "core/strategy/divergence.h"
#include "core/strategy/mirrored_strategy.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace mirrorlab::python {
namespace {

using Bytes = py::array_t<std::uint8_t, py::array::c_style>;

// Examples the core reads a global batch's shards from (the package checked the arrays).
struct Data {
  core::Dataset dataset;
};

template <class T>
py::array_t<T> to_array(const std::vector<T>& values, std::vector<py::ssize_t> shape) {
  py::array_t<T> a(std::move(shape));
  std::copy(values.begin(), values.end(), a.mutable_data());
  return a;
}

class PyStepByStep;
// The step held between its phases in this process, if any (the GIL guards it). It holds every
// device's stream, which every model of the process shares: until it ends, nothing else may run
// on the devices (another step, a fit, an evaluation, a strategy's end would wait for ever).
PyStepByStep* held_step = nullptr;
// Strategies whose model ended while a step held the devices: their end waits for the devices'
// streams, so it waits for that step's (ended_holding()).
std::vector<std::unique_ptr<core::MirroredStrategy>> retired;

// The held step `step` has ended: the devices are free, and the strategies retired meanwhile end.
void ended_holding(const PyStepByStep* step) {
  if (held_step != step) return;
  held_step = nullptr;
  std::vector<std::unique_ptr<core::MirroredStrategy>> ending = std::move(retired);
  retired.clear();
  py::gil_scoped_release waiting;
  ending.clear();
}

class PyStepByStep {
 public:
  // `loss_scaling`: how each replica scales its loss in this step ("replica-mean",
  // "global-batch", "batch-mean": core/strategy/mirrored_strategy.h).
  PyStepByStep(py::object run, std::shared_ptr<Data> data, std::vector<std::uint32_t> indices,
               std::size_t batch_per_replica, const std::string& loss_scaling)
      : run_(std::move(run)), data_(std::move(data)), indices_(std::move(indices)) {
    check_devices_free("another step");
    core::MirroredStrategy& strategy = strategy_of(run_, "a step taken phase by phase");
    for (std::uint32_t i : indices_) {
      if (i >= data_->dataset.size()) throw py::index_error("an example beyond the data set");
    }
    strategy.set_loss_scaling(core::parse_loss_scaling(loss_scaling));
    const core::GlobalBatch batch{&data_->dataset, indices_, batch_per_replica};
    {
      py::gil_scoped_release computing;
      step_ = std::make_unique<core::StepByStep>(strategy, batch);
    }
    note_step_batch(run_, batch_per_replica);
    if (!step_->ended()) held_step = this;
  }
  ~PyStepByStep() {
    {
      py::gil_scoped_release finishing;
      step_.reset();
    }
    ended_holding(this);
  }
  // Where it is held, or "" once ended (then it no longer holds the devices).
  std::string where() {
    if (step_->ended()) {
      ended_holding(this);
      return "";
    }
    return step_->held_at()->label();
  }

  // "split", "forward", "backward", "all-reduce step", "update"; "" once ended.
  std::string boundary() const {
    return step_->ended() ? "" : core::to_string(step_->held_at()->boundary);
  }
  py::dict point() const {
    py::dict out;
    if (step_->ended()) return out;
    const core::PausePoint& p = *step_->held_at();
    out["step"] = p.step;
    out["boundary"] = core::to_string(p.boundary);
    out["label"] = p.label();
    out["all_reduce_step"] = p.all_reduce_step;
    out["all_reduce_steps"] = p.all_reduce_steps;
    out["all_reduce_phase"] = p.all_reduce_phase;
    return out;
  }
  void advance() {
    try {
      py::gil_scoped_release computing;
      step_->advance();
    } catch (...) {
      ended_holding(this);  // a step that throws has ended
      throw;
    }
    if (step_->ended()) ended_holding(this);
  }
  // Each replica's loss sums, unscaled: (sum of its examples' losses, count, correct).
  std::vector<std::tuple<double, std::int64_t, std::int64_t>> finish() {
    std::vector<core::LossStats> results;
    try {
      py::gil_scoped_release computing;
      results = step_->finish();
    } catch (...) {
      ended_holding(this);
      throw;
    }
    ended_holding(this);
    std::vector<std::tuple<double, std::int64_t, std::int64_t>> out;
    for (const core::LossStats& r : results) out.emplace_back(r.loss_sum, r.count, r.correct);
    return out;
  }
  int replicas() const { return step_->replicas(); }

  py::tuple shard(int replica) {
    std::vector<float> images;
    std::vector<std::uint8_t> labels;
    {
      py::gil_scoped_release reading;
      images = step_->images(replica);
      labels = step_->labels(replica);
    }
    const auto n = static_cast<py::ssize_t>(labels.size());
    return py::make_tuple(to_array(images, {n, 28, 28, 1}), to_array(labels, {n}));
  }
  py::tuple logits(int replica) {
    std::vector<float> logits;
    std::vector<double> losses;
    {
      py::gil_scoped_release reading;
      logits = step_->logits(replica);
      const std::vector<std::uint8_t> labels = step_->labels(replica);
      const int classes = labels.empty() ? 1 : static_cast<int>(logits.size() / labels.size());
      losses = core::per_example_loss(logits, labels, classes);
    }
    const auto n = static_cast<py::ssize_t>(losses.size());
    const py::ssize_t classes = n == 0 ? 0 : static_cast<py::ssize_t>(logits.size()) / n;
    return py::make_tuple(to_array(logits, {n, classes}), to_array(losses, {n}));
  }
  py::array_t<float> gradients(int replica) {
    std::vector<float> g;
    {
      py::gil_scoped_release reading;
      g = step_->gradients(replica);
    }
    return to_array(g, {static_cast<py::ssize_t>(g.size())});
  }
  py::array_t<float> weights(int replica) {
    std::vector<float> w;
    {
      py::gil_scoped_release reading;
      w = step_->weights(replica);
    }
    return to_array(w, {static_cast<py::ssize_t>(w.size())});
  }
  std::uint64_t fingerprint(int replica) {
    py::gil_scoped_release reading;
    return step_->fingerprint(replica);
  }
  void set_gradients(int replica, const py::array_t<float, py::array::c_style>& values) {
    const std::span<const float> v(values.data(), static_cast<std::size_t>(values.size()));
    py::gil_scoped_release writing;
    step_->set_gradients(replica, v);
  }

 private:
  py::object run_;  // keeps the model's strategy alive while the step holds it
  std::shared_ptr<Data> data_;
  std::vector<std::uint32_t> indices_;
  std::unique_ptr<core::StepByStep> step_;
};

}  // namespace

void check_devices_free(const std::string& what) {
  if (held_step == nullptr) return;
  const std::string where = held_step->where();
  if (where.empty()) return;  // it ended meanwhile
  throw std::logic_error(what +
                         " cannot run while a StepByStep holds the devices between its "
                         "phases (" +
                         where + "): end it first (step.update() or step.finish())");
}

void end_strategy(std::unique_ptr<core::MirroredStrategy> strategy) {
  if (held_step != nullptr && !held_step->where().empty()) {
    retired.push_back(std::move(strategy));
    return;
  }
  py::gil_scoped_release ending;
  strategy.reset();
}

void bind_custom_loop(py::module_& m) {
  // The core's exceptions a training step may end with, as the package raises them (a fit's
  // too): the replicas out of sync (a RuntimeError), a loss or gradient NaN or infinite.
  py::register_exception<core::ReplicasOutOfSync>(m, "ReplicasOutOfSyncError", PyExc_RuntimeError);
  py::register_exception<core::DivergedError>(m, "DivergedError", PyExc_FloatingPointError);

  py::class_<Data, std::shared_ptr<Data>>(m, "_Data")
      .def(py::init([](const Bytes& images, const Bytes& labels) {
             auto d = std::make_shared<Data>();
             d->dataset.rows = d->dataset.cols = core::kFashionMnistSide;
             d->dataset.images.assign(images.data(), images.data() + images.size());
             d->dataset.labels.assign(labels.data(), labels.data() + labels.size());
             return d;
           }),
           py::arg("images"), py::arg("labels"))
      .def("__len__", [](const Data& d) { return d.dataset.size(); });

  m.def(
      "_split_global_batch",
      [](std::size_t count, int replicas, std::size_t per_replica) {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        for (const core::Shard& s : core::split_global_batch(count, replicas, per_replica)) {
          out.emplace_back(s.begin, s.count);
        }
        return out;
      },
      py::arg("count"), py::arg("replicas"), py::arg("per_replica"));

  py::class_<PyStepByStep>(m, "_StepByStep")
      .def(py::init<py::object, std::shared_ptr<Data>, std::vector<std::uint32_t>, std::size_t,
                    const std::string&>(),
           py::arg("run"), py::arg("data"), py::arg("indices"), py::arg("batch_per_replica"),
           py::arg("loss_scaling"))
      .def_property_readonly("boundary", &PyStepByStep::boundary)
      .def_property_readonly("point", &PyStepByStep::point)
      .def_property_readonly("replicas", &PyStepByStep::replicas)
      .def("advance", &PyStepByStep::advance)
      .def("finish", &PyStepByStep::finish)
      .def("shard", &PyStepByStep::shard, py::arg("replica"))
      .def("logits", &PyStepByStep::logits, py::arg("replica"))
      .def("gradients", &PyStepByStep::gradients, py::arg("replica"))
      .def("weights", &PyStepByStep::weights, py::arg("replica"))
      .def("fingerprint", &PyStepByStep::fingerprint, py::arg("replica"))
      .def("set_gradients", &PyStepByStep::set_gradients, py::arg("replica"), py::arg("values"));
}

}  // namespace mirrorlab::python
