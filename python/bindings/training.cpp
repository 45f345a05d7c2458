// One model on the process's devices, mirrored: what keras.Sequential compiled under a
// MirroredStrategy's scope holds. Built from the run's settings (core/settings/run_settings.h,
// the same value the command line's flags make) and the model's layers; fit() is the core's
// fit loop with Keras' progress printed through Python, the GIL released while it computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/model_spec.h"
#include "core/session/text/keras_progress_text.h"
#include "core/session/text/keras_summary.h"
#include "core/session/training_session.h"
#include "core/settings/run_settings.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "nlohmann/json.hpp"
#include "python/bindings/bindings.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_names.h"

namespace py = pybind11;

namespace mirrorlab::python {
namespace {

using Bytes = py::array_t<std::uint8_t, py::array::c_style>;

core::LayerSpec::Kind layer_kind(const std::string& name) {
  using K = core::LayerSpec::Kind;
  for (K kind : {K::kConv2D, K::kMaxPooling2D, K::kFlatten, K::kDense, K::kReLU}) {
    if (name == core::to_string(kind)) return kind;
  }
  throw py::value_error("no layer '" + name + "' in mirrorlab's core");
}

// The package checked the arrays' types and shapes; the core keeps its own copy.
core::Dataset dataset_of(const Bytes& images, const Bytes& labels) {
  core::Dataset d;
  d.rows = d.cols = core::kFashionMnistSide;
  d.images.assign(images.data(), images.data() + images.size());
  d.labels.assign(labels.data(), labels.data() + labels.size());
  return d;
}

// mirrorlab.distribute's class of an all-reduce of the core's table; auto is cross_device_ops=None.
std::string python_class(std::string_view algorithm) {
  if (algorithm == vgpu::kAutoAllReduce) return "cross_device_ops=None";
  if (algorithm == vgpu::kReduceToOneName) return "ReductionToOneDevice()";
  if (algorithm == vgpu::kRingName) return "RingAllReduce()";
  if (algorithm == vgpu::kOneShotName) return "OneShotAllReduce()";
  if (algorithm == vgpu::kNcclName) return "NcclAllReduce()";
  return std::string(algorithm);
}

// Why an all-reduce cannot run, its advice in Python's words: the classes to give, not the
// command's --allreduce values.
std::string in_python_words(const vgpu::AllReduceRefusal& refusal) {
  vgpu::AllReduceWords words;
  words.verb = "give";
  words.name = python_class;
  words.the = python_class;
  words.auto_alone = " (TensorFlow's choice)";
  return vgpu::refusal_text(refusal, words);
}

// Where a fit stands, for another Python thread to read while it runs.
struct Progress {
  int epoch = 0, epochs = 0;
  std::int64_t step_in_epoch = 0, steps_per_epoch = 0, steps = 0;
  double loss = 0, accuracy = 0;
};

// Thrown through the core's fit when a callback raised as an epoch began: the fit ends there,
// before the epoch's first batch, and the callback's exception is raised after it.
struct CallbackRaised : std::runtime_error {
  CallbackRaised() : std::runtime_error("a callback raised an exception") {}
};

// Keras' progress printed through `write` (Python's sys.stdout.write), and Ctrl-C: asked after
// every step, it stops the fit there, and the KeyboardInterrupt is raised once the fit returns.
class PythonCallback : public core::FitCallback {
 public:
  // `watching`: a window's session told of the fit too (mirrorlab.gui.watch), or nullptr.
  // `epochs`: None, or Python's hook(event, epoch, logs) -> bool called with the GIL as an
  // epoch begins ("begin", logs {}) and ends ("end", before its line is printed, as Keras calls
  // its callbacks): true at the end ends the fit there; an exception ends it (as the epoch
  // begins: before its first batch and its "Epoch 1/3"; as it ends: before its line) and is
  // raised after it.
  PythonCallback(py::object write, py::object epochs, core::KerasTextStyle style,
                 std::mutex& progress_mutex, Progress& progress, core::FitCallback* watching)
      : write_(std::move(write)),
        epochs_(std::move(epochs)),
        text_(style),
        mutex_(&progress_mutex),
        progress_(&progress),
        watching_(watching) {}
  ~PythonCallback() override {
    py::gil_scoped_acquire python;
    write_ = py::object();
    epochs_ = py::object();
  }

  void on_epoch_begin(int epoch, int epochs, std::int64_t steps_per_epoch) override {
    if (watching_) watching_->on_epoch_begin(epoch, epochs, steps_per_epoch);
    {
      const std::lock_guard lock(*mutex_);
      progress_->epoch = epoch;
      progress_->epochs = epochs;
      progress_->step_in_epoch = 0;
      progress_->steps_per_epoch = steps_per_epoch;
    }
    hook("begin", epoch, nullptr);
    if (interrupt_) throw CallbackRaised();
    print(text_.epoch_begin(epoch, epochs));
  }
  void on_train_step(const core::LossStats& step, double seconds) override {
    if (watching_) watching_->on_train_step(step, seconds);
  }
  void on_batch_end(int epoch, std::int64_t step, std::int64_t steps, const core::Metrics& running,
                    double seconds) override {
    if (watching_) watching_->on_batch_end(epoch, step, steps, running, seconds);
    {
      const std::lock_guard lock(*mutex_);
      progress_->step_in_epoch = step;
      ++progress_->steps;
      progress_->loss = running.loss;
      progress_->accuracy = running.accuracy;
    }
    py::gil_scoped_acquire python;
    if (PyErr_CheckSignals() != 0) {
      interrupt_ = std::make_unique<py::error_already_set>();
      stop_ = true;
    }
    print_holding_gil(text_.batch_end(step, steps, running, seconds));
  }
  void on_epoch_end(const core::EpochLog& log) override {
    if (watching_) watching_->on_epoch_end(log);
    const bool raised_before = interrupt_ != nullptr;
    hook("end", log.epoch, &log);
    // A callback that raises here is raised before the epoch's line, as Keras' is.
    if (!raised_before && interrupt_) return;
    print(text_.epoch_end(log));
  }
  void on_loss_growth(const core::LossGrowth& growth) override {
    if (watching_) watching_->on_loss_growth(growth);
  }

  bool stop_requested() const { return stop_; }
  // After the fit, with the GIL: the KeyboardInterrupt it was stopped by, raised again.
  void raise_interrupt() {
    if (!interrupt_) return;
    print_holding_gil(text_.interrupt_line());
    std::unique_ptr<py::error_already_set> e = std::move(interrupt_);
    e->restore();
    throw py::error_already_set();
  }

 private:
  // Calls the epochs' hook (epochs 0-based, as Keras numbers them for callbacks) with the
  // epoch's logs (none as it begins).
  void hook(const char* event, int epoch, const core::EpochLog* log) {
    if (interrupt_) return;
    py::gil_scoped_acquire python;
    if (epochs_.is_none()) return;
    py::dict logs;
    if (log != nullptr) {
      logs["loss"] = log->train.loss;
      logs["accuracy"] = log->train.accuracy;
      if (log->has_validation) {
        logs["val_loss"] = log->validation.loss;
        logs["val_accuracy"] = log->validation.accuracy;
      }
    }
    try {
      const bool stop = epochs_(event, epoch - 1, logs).cast<bool>();
      if (stop && log != nullptr) stop_ = true;
    } catch (py::error_already_set& e) {
      interrupt_ = std::make_unique<py::error_already_set>(std::move(e));
      stop_ = true;
    }
  }
  void print(const std::string& text) {
    if (text.empty()) return;
    py::gil_scoped_acquire python;
    print_holding_gil(text);
  }
  void print_holding_gil(const std::string& text) {
    if (text.empty() || write_.is_none()) return;
    write_(text);
  }

  py::object write_;
  py::object epochs_;
  core::KerasProgressText text_;
  std::mutex* mutex_;
  Progress* progress_;
  core::FitCallback* watching_;
  std::atomic<bool> stop_ = false;
  std::unique_ptr<py::error_already_set> interrupt_;
};

// A run's one call at a time: fit, evaluate or a step taken phase by phase on a model that
// another thread is fitting or evaluating would mix their steps on the same weights (or wait on
// each other's collectives for ever), so the second is refused, saying what runs.
[[noreturn]] void refuse_busy(const std::string& what) {
  throw std::logic_error(what +
                         " cannot start while this model trains or evaluates (on another thread, "
                         "or in a callback of its fit): wait for that call to return "
                         "(model.progress() says where it stands; a callback of its fit may "
                         "read get_weights and save_weights, and set "
                         "optimizer.learning_rate), or use a model of its own");
}

void check_not_busy(const std::atomic<bool>& flag, const std::string& what) {
  if (flag.load()) refuse_busy(what);
}

// Marks a run busy (a fit or an evaluation) for as long as it lives.
class Busy {
 public:
  // Claims `flag` for `what` ("model.fit"), or throws std::logic_error (RuntimeError) if another
  // thread holds it.
  Busy(std::atomic<bool>& flag, const std::string& what) : flag_(&flag) {
    if (flag_->exchange(true)) refuse_busy(what);
  }
  ~Busy() { flag_->store(false); }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<bool>* flag_;
};

class Run {
 public:
  // `device_indices`: which of the process's logical devices, in order (empty: all of them).
  // `workers` (a _Workers, or None): this process is one worker of those, each making the same
  // model at the same point (the strategy's making is collective).
  Run(const std::string& settings_json,
      const std::vector<std::tuple<std::string, int, std::string>>& layers,
      const std::vector<int>& device_indices, py::object workers)
      : workers_(std::move(workers)) {
    check_devices_free("a new model (compile, summary)");
    try {
      settings_ =
          core::read_settings_json(nlohmann::json::parse(settings_json), core::RunSettings{});
    } catch (const core::SettingError& e) {
      throw py::value_error(e.what());
    }
    core::StrategyOptions options = core::strategy_options(settings_);
    for (const auto& [kind, size, name] : layers) {
      options.layers.push_back({layer_kind(kind), size, name});
    }
    layers_ = options.layers;
    std::vector<vgpu::Device*> all;
    try {
      all = registry().logical_devices();
    } catch (const vgpu::ConfigurationError& e) {
      throw py::value_error(e.what());
    }
    std::vector<vgpu::Device*> devices;
    for (int i : device_indices) {
      if (i < 0 || i >= static_cast<int>(all.size())) {
        const std::string there =
            all.empty()       ? "there is no logical GPU"
            : all.size() == 1 ? "the one logical GPU is 0"
                              : "the logical GPUs are 0 to " + std::to_string(all.size() - 1);
        throw py::value_error("no logical GPU " + std::to_string(i) + ": " + there);
      }
      devices.push_back(all[static_cast<std::size_t>(i)]);
    }
    if (devices.empty()) devices = all;
    // One BLAS thread per device thread, as `mirrorlab train` has it: the same sums, bit for bit
    // (OpenBLAS's own threads would cut the products another way), and no fight for the cores.
    core::set_blas_single_threaded();
    vgpu::WorkerGroup* group = worker_group_of(workers_);
    try {
      py::gil_scoped_release building;
      strategy_ = std::make_unique<core::MirroredStrategy>(devices, options, nullptr, group);
    } catch (const vgpu::AllReduceUnavailable& e) {
      throw py::value_error(in_python_words(e.refusal()));
    }
  }

  // The devices' streams are every model's: while another model's step holds them, this
  // strategy's end waits for that step's.
  ~Run() {
    watching_.reset();  // takes its listeners off the strategy (this thread, between steps)
    end_strategy(std::move(strategy_));
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  int num_replicas_in_sync() const { return strategy_->num_replicas_in_sync(); }
  // Keras' table; `folded`: the core's layers that are part of the one before in Keras (an
  // activation="relu"'s ReLU), left out of the rows; `types`: Keras' type of a layer by name,
  // where it is not the core's (an Activation("relu")).
  std::string summary(const std::string& name, const std::vector<std::string>& folded,
                      const std::map<std::string, std::string>& types) {
    return core::model_summary(strategy_->replica(0).model(), name, {folded, types});
  }
  std::string device_tuple() const { return strategy_->device_tuple(); }
  std::string all_reduce_log() const { return strategy_->tensorflow_all_reduce_log(); }
  std::string all_reduce_name() const { return strategy_->all_reduce().name(); }
  std::vector<std::string> all_reduce_notes() const { return strategy_->all_reduce_notes(); }
  std::uint64_t fingerprint() {
    py::gil_scoped_release computing;
    return strategy_->replica(0).model().params_fingerprint();
  }
  std::int64_t steps_done() const { return strategy_->steps_done(); }
  // The strategy, for a step taken phase by phase (`what`), refused while fit or evaluate runs.
  core::MirroredStrategy& strategy(const std::string& what) {
    check_not_busy(busy_, what);
    return *strategy_;
  }

  // The session a window watches this run through (mirrorlab.gui.watch), made at the first
  // call, on this thread, between steps; it lives as long as the run, so a window opened again
  // shows the run from its first watched step.
  core::TrainingSession& watching_session() {
    if (watching_) return *watching_;
    check_devices_free("mirrorlab.gui.watch");
    check_not_busy(busy_, "mirrorlab.gui.watch");
    core::SessionConfig config;
    config.settings = settings_;
    config.settings.devices.gpus = strategy_->num_local_replicas();
    // The timing model knows the CNN and the MLP: a model of those very layers is that one.
    config.layers = layers_;
    for (core::ModelKind kind : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
      const std::vector<core::LayerSpec> known = core::layer_specs_of(kind);
      if (std::equal(layers_.begin(), layers_.end(), known.begin(), known.end(),
                     [](const core::LayerSpec& a, const core::LayerSpec& b) {
                       return a.kind == b.kind && a.size == b.size;
                     })) {
        config.settings.model = kind;
        config.layers.clear();
      }
    }
    watching_ = std::make_unique<core::TrainingSession>(*strategy_, config, "Python");
    return *watching_;
  }

  // Keras' get_weights(): each kernel and bias of replica 0, in the model's order, as arrays of
  // their shapes (every replica holds the same).
  py::list get_weights() {
    std::vector<float> params;
    {
      py::gil_scoped_release copying;
      params = strategy_->replica(0).model().params_to_host();
    }
    py::list out;
    for (const core::WeightTensor& t : strategy_->replica(0).model().weight_tensors()) {
      std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
      py::array_t<float> a(shape);
      std::copy(params.begin() + static_cast<std::ptrdiff_t>(t.offset),
                params.begin() + static_cast<std::ptrdiff_t>(t.offset + t.size), a.mutable_data());
      out.append(a);
    }
    return out;
  }
  // Keras' set_weights(): `weights` (float32, C order, the shapes get_weights() gives; the package
  // checked them) on every replica. The optimizer's slots and progress stay replica 0's: replicas
  // that had left sync are in it again.
  void set_weights(const std::vector<py::array_t<float, py::array::c_style>>& weights) {
    check_devices_free("model.set_weights");
    const Busy busy(busy_, "model.set_weights");
    const std::vector<core::WeightTensor> tensors = strategy_->replica(0).model().weight_tensors();
    if (weights.size() != tensors.size()) {
      throw py::value_error("set_weights: " + std::to_string(weights.size()) + " arrays for " +
                            std::to_string(tensors.size()) + " weights");
    }
    py::gil_scoped_release copying;
    core::ReplicaState state = strategy_->state();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (static_cast<std::size_t>(weights[i].size()) != tensors[i].size) {
        throw std::invalid_argument("set_weights: " + tensors[i].name + " holds " +
                                    std::to_string(tensors[i].size) + " numbers");
      }
      std::copy(weights[i].data(), weights[i].data() + weights[i].size(),
                state.params.begin() + static_cast<std::ptrdiff_t>(tensors[i].offset));
    }
    strategy_->restore(state, strategy_->steps_done());
  }

  // The optimizer's state, replica 0's (every replica holds the same): (its update count, Nadam's
  // momentum schedule so far, {slot name: one array per weight tensor, of its shape}).
  py::tuple optimizer_state() {
    core::ReplicaState state;
    {
      py::gil_scoped_release copying;
      state = strategy_->state();
    }
    py::dict slots;
    const std::vector<core::WeightTensor> tensors = strategy_->replica(0).model().weight_tensors();
    for (const core::ReplicaState::Slot& slot : state.slots) {
      py::list arrays;
      for (const core::WeightTensor& t : tensors) {
        py::array_t<float> a(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
        std::copy_n(slot.values.begin() + static_cast<std::ptrdiff_t>(t.offset), t.size,
                    a.mutable_data());
        arrays.append(a);
      }
      slots[py::str(slot.name)] = arrays;
    }
    return py::make_tuple(state.progress.iterations, state.progress.momentum_schedule, slots);
  }
  // Sets the optimizer's state on every replica: `slots` as optimizer_state() gives them (every
  // slot of this optimizer, an array per weight tensor; the package checked their shapes and
  // values). The core refuses a negative count or a schedule out of (0, 1], changing nothing.
  void set_optimizer_state(
      std::int64_t iterations, double momentum_schedule,
      const std::map<std::string, std::vector<py::array_t<float, py::array::c_style>>>& slots) {
    check_devices_free("model.load_weights");
    const Busy busy(busy_, "model.load_weights");
    const std::vector<core::WeightTensor> tensors = strategy_->replica(0).model().weight_tensors();
    py::gil_scoped_release copying;
    core::ReplicaState state = strategy_->state();
    if (slots.size() != state.slots.size()) {
      throw std::invalid_argument("the optimizer has " + std::to_string(state.slots.size()) +
                                  " slots, not " + std::to_string(slots.size()));
    }
    for (core::ReplicaState::Slot& slot : state.slots) {
      const auto given = slots.find(slot.name);
      if (given == slots.end() || given->second.size() != tensors.size()) {
        throw std::invalid_argument("the optimizer's slot " + slot.name + " needs an array for " +
                                    "each of the " + std::to_string(tensors.size()) + " weights");
      }
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto& array = given->second[i];
        if (static_cast<std::size_t>(array.size()) != tensors[i].size) {
          throw std::invalid_argument("the optimizer's " + slot.name + " for " + tensors[i].name +
                                      " needs " + std::to_string(tensors[i].size) + " numbers");
        }
        std::copy_n(array.data(), tensors[i].size,
                    slot.values.begin() + static_cast<std::ptrdiff_t>(tensors[i].offset));
      }
    }
    state.progress = {iterations, momentum_schedule};
    strategy_->restore(state, strategy_->steps_done());
  }

  // Keras' optimizer variable learning_rate, which optimizer.learning_rate = x and a weights file
  // set: every replica's from the next step on (the package checked it; the core refuses one not
  // above 0, changing nothing). Also from a callback of this run's fit, as Keras' schedules set
  // it: that is the fit's own thread, between its steps (where the strategy takes it).
  void set_learning_rate(float learning_rate) {
    const std::string what = "setting the learning rate";
    check_devices_free(what);
    std::optional<Busy> busy;
    if (!busy_.load() || fit_thread_.load() != std::this_thread::get_id())
      busy.emplace(busy_, what);
    {
      py::gil_scoped_release setting;
      strategy_->set_learning_rate(learning_rate);
    }
    settings_.optimizer.learning_rate = learning_rate;  // as a window opened from now shows it
    if (watching_) watching_->watched_learning_rate_set(learning_rate);  // and one open now
  }

  // The batch of the last fit or custom-loop step: a window opened later shows it.
  void note_batch(std::size_t batch_per_replica) {
    settings_.batch_per_replica = batch_per_replica;
  }

  std::vector<std::string> weight_names() {
    std::vector<std::string> names;
    for (const core::WeightTensor& t : strategy_->replica(0).model().weight_tensors()) {
      names.push_back(t.name);
    }
    return names;
  }

  py::dict fit(const Bytes& x, const Bytes& y, std::size_t batch_per_replica, int epochs,
               std::int64_t max_steps, std::optional<Bytes> x_val, std::optional<Bytes> y_val,
               py::object write, bool live, bool one_line, bool with_accuracy,
               py::object epoch_hook) {
    check_devices_free("model.fit");
    const Busy busy(busy_, "model.fit");
    fit_thread_ = std::this_thread::get_id();  // its callbacks may set the learning rate
    struct FitEnds {
      std::atomic<std::thread::id>* thread;
      ~FitEnds() { thread->store(std::thread::id()); }
    } fit_ends{&fit_thread_};
    const core::Dataset train = dataset_of(x, y);
    std::optional<core::Dataset> validation;
    if (x_val && y_val) validation = dataset_of(*x_val, *y_val);
    core::FitOptions options = core::fit_options(settings_);
    options.batch_per_replica = batch_per_replica;
    note_batch(batch_per_replica);
    options.epochs = epochs;
    options.max_steps = max_steps;
    PythonCallback callback(std::move(write), std::move(epoch_hook),
                            core::KerasTextStyle{live, one_line, with_accuracy}, progress_mutex_,
                            progress_, watching_ ? &watching_->watched_fit() : nullptr);
    // With several workers, a stop one asks (Ctrl-C, a callback) is every worker's, agreed
    // between the same steps: else the others would wait for it in the next all-reduce.
    vgpu::WorkerGroup* group = worker_group_of(workers_);
    options.stop_requested = [&callback, group] {
      return vgpu::any_worker_asks(group, callback.stop_requested());
    };
    core::History history;
    strategy_->set_loss_scaling(
        settings_.loss_scaling);  // model.fit's (a custom loop sets its own)
    {
      py::gil_scoped_release computing;
      if (watching_) {
        const std::size_t global =
            batch_per_replica * static_cast<std::size_t>(strategy_->num_replicas_in_sync());
        watching_->watched_fit_began(epochs, global);
      }
      try {
        history =
            core::fit(*strategy_, train, validation ? &*validation : nullptr, options, &callback);
      } catch (const CallbackRaised& e) {
        if (watching_) watching_->watched_fit_ended(e.what());
      } catch (const std::exception& e) {
        if (watching_) watching_->watched_fit_ended(e.what());
        throw;
      }
      if (watching_) watching_->watched_fit_ended("");
    }
    callback.raise_interrupt();
    py::dict out;
    py::list loss, accuracy, val_loss, val_accuracy;
    for (const core::EpochLog& e : history.epochs) {
      loss.append(e.train.loss);
      accuracy.append(e.train.accuracy);
      if (e.has_validation) {
        val_loss.append(e.validation.loss);
        val_accuracy.append(e.validation.accuracy);
      }
    }
    out["accuracy"] = accuracy;
    out["loss"] = loss;
    if (validation) {
      out["val_accuracy"] = val_accuracy;
      out["val_loss"] = val_loss;
    }
    out["stop_reason"] = core::to_string(history.stop_reason);
    out["steps"] = history.steps;
    out["seconds"] = history.train_seconds;
    return out;
  }

  // The loss and accuracy over (x, y); Keras' line written through `write` unless it is None.
  std::tuple<double, double> evaluate(const Bytes& x, const Bytes& y, std::size_t batch_per_replica,
                                      py::object write, bool live, bool one_line,
                                      bool with_accuracy) {
    check_devices_free("model.evaluate");
    const Busy busy(busy_, "model.evaluate");
    const core::Dataset data = dataset_of(x, y);
    core::LossStats stats;
    double seconds = 0;
    {
      py::gil_scoped_release computing;
      check_in_sync("model.evaluate");
      const auto start = std::chrono::steady_clock::now();
      stats = strategy_->evaluate(data, batch_per_replica);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const core::Metrics m = core::Metrics::from(stats);
    if (!write.is_none()) {
      core::KerasProgressText text(core::KerasTextStyle{live, one_line, with_accuracy});
      write(text.evaluate_end(
          steps_of(data,
                   batch_per_replica * static_cast<std::size_t>(strategy_->num_replicas_in_sync())),
          seconds, m));
    }
    return {m.loss, m.accuracy};
  }

  // Keras' predict(): the logits of every image of `x`, (images, classes); Keras' line written
  // through `write` unless it is None.
  py::array_t<float> predict(const Bytes& x, std::size_t global_batch, py::object write, bool live,
                             bool one_line) {
    check_devices_free("model.predict");
    const Busy busy(busy_, "model.predict");
    const core::Dataset data = dataset_of(x, Bytes(static_cast<py::ssize_t>(x.shape(0))));
    std::vector<float> logits;
    double seconds = 0;
    {
      py::gil_scoped_release computing;
      check_in_sync("model.predict");
      const auto start = std::chrono::steady_clock::now();
      logits = strategy_->predict(data, global_batch);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!write.is_none()) {
      core::KerasProgressText text(core::KerasTextStyle{live, one_line, false});
      write(text.predict_end(steps_of(data, global_batch), seconds));
    }
    const auto images = static_cast<py::ssize_t>(data.labels.size());
    py::array_t<float> out({images, images ? static_cast<py::ssize_t>(logits.size()) / images : 0});
    std::copy(logits.begin(), logits.end(), out.mutable_data());
    return out;
  }

  py::dict progress() {
    Progress p;
    {
      const std::lock_guard lock(progress_mutex_);
      p = progress_;
    }
    py::dict out;
    out["epoch"] = p.epoch;
    out["epochs"] = p.epochs;
    out["step_in_epoch"] = p.step_in_epoch;
    out["steps_per_epoch"] = p.steps_per_epoch;
    out["steps"] = p.steps;
    out["loss"] = p.loss;
    out["accuracy"] = p.accuracy;
    return out;
  }

  // The global batches of `global` examples evaluate and predict walk `data` in.
  static std::int64_t steps_of(const core::Dataset& data, std::size_t global) {
    return static_cast<std::int64_t>((data.labels.size() + global - 1) / global);
  }

  // Replicas out of sync (weights changed on one after the all-reduce) would each score their
  // shard with other weights (or save replica 0's as everyone's): refused, as the next training
  // step refuses them.
  void check_in_sync(const std::string& what) {
    if (strategy_->num_replicas_in_sync() < 2) return;
    try {
      strategy_->check_in_sync();
    } catch (const core::ReplicasOutOfSync& e) {
      throw core::ReplicasOutOfSync(what + ": " + e.what() +
                                    " Put every replica back in step with model.set_weights("
                                    "weights), or make the model again.");
    }
  }

 private:
  py::object workers_;  // kept while the strategy uses its group
  core::RunSettings settings_;
  std::vector<core::LayerSpec> layers_;  // the model's
  std::unique_ptr<core::MirroredStrategy> strategy_;
  std::unique_ptr<core::TrainingSession> watching_;  // a window's (mirrorlab.gui.watch)
  std::atomic<bool> busy_ = false;                   // fit or evaluate runs
  std::atomic<std::thread::id> fit_thread_;          // the thread of the fit under way
  std::mutex progress_mutex_;
  Progress progress_;
};

}  // namespace

core::MirroredStrategy& strategy_of(py::handle run, const std::string& what) {
  return run.cast<Run&>().strategy(what);
}
core::TrainingSession& watching_session_of(py::handle run) {
  return run.cast<Run&>().watching_session();
}
void note_step_batch(py::handle run, std::size_t batch_per_replica) {
  run.cast<Run&>().note_batch(batch_per_replica);
}

void bind_training(py::module_& m) {
  py::class_<Run>(m, "_Run")
      .def(py::init<const std::string&,
                    const std::vector<std::tuple<std::string, int, std::string>>&,
                    const std::vector<int>&, py::object>(),
           py::arg("settings_json"), py::arg("layers"), py::arg("device_indices"),
           py::arg("workers") = py::none())
      .def_property_readonly("num_replicas_in_sync", &Run::num_replicas_in_sync)
      .def("summary", &Run::summary, py::arg("name"), py::arg("folded"), py::arg("types"))
      .def("device_tuple", &Run::device_tuple)
      .def("all_reduce_log", &Run::all_reduce_log)
      .def("all_reduce_name", &Run::all_reduce_name)
      .def("all_reduce_notes", &Run::all_reduce_notes)
      .def("fingerprint", &Run::fingerprint)
      .def("steps_done", &Run::steps_done)
      .def("get_weights", &Run::get_weights)
      .def("set_weights", &Run::set_weights, py::arg("weights"))
      .def("optimizer_state", &Run::optimizer_state)
      .def("set_learning_rate", &Run::set_learning_rate, py::arg("learning_rate"))
      .def("set_optimizer_state", &Run::set_optimizer_state, py::arg("iterations"),
           py::arg("momentum_schedule"), py::arg("slots"))
      .def("predict", &Run::predict, py::arg("x"), py::arg("global_batch"), py::arg("write"),
           py::arg("live"), py::arg("one_line"))
      .def("weight_names", &Run::weight_names)
      .def("check_in_sync", &Run::check_in_sync, py::arg("what"),
           py::call_guard<py::gil_scoped_release>())  // with workers: an exchange among them
      .def("fit", &Run::fit, py::arg("x"), py::arg("y"), py::arg("batch_per_replica"),
           py::arg("epochs"), py::arg("max_steps"), py::arg("x_val"), py::arg("y_val"),
           py::arg("write"), py::arg("live"), py::arg("one_line"), py::arg("accuracy"),
           py::arg("epoch_hook") = py::none())
      .def("evaluate", &Run::evaluate, py::arg("x"), py::arg("y"), py::arg("batch_per_replica"),
           py::arg("write"), py::arg("live"), py::arg("one_line"), py::arg("accuracy"))
      .def("progress", &Run::progress);
  m.def("_settings_keys", &core::setting_keys);
}

}  // namespace mirrorlab::python
