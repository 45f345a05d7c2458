#include "app/train_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "app/fault_flags.h"
#include "app/flags.h"
#include "app/history_json.h"
#include "app/interrupt.h"
#include "app/keras_progress.h"
#include "app/model_summary.h"
#include "app/output_files.h"
#include "app/train_checkpoints.h"
#include "app/workers.h"
#include "core/nn/kernels_cpu.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::app {
namespace {

void print_phase_table(const core::MirroredStrategy& strategy,
                       const std::vector<core::PhaseTotals>& totals, std::int64_t steps) {
  const core::Phase shown[] = {core::Phase::kSplit, core::Phase::kForward,   core::Phase::kBackward,
                               core::Phase::kWait,  core::Phase::kAllReduce, core::Phase::kUpdate};
  std::printf("\nTime per phase (seconds, %s)\n%-8s",
              steps == strategy.steps_done() ? "whole run" : "the steps this run made", "device");
  for (core::Phase p : shown) std::printf(" %11s", core::to_string(p));
  std::printf("\n");
  double all_reduce = 0;
  for (std::size_t d = 0; d < strategy.devices().size(); ++d) {
    std::printf("%-8s", strategy.devices()[d]->name().c_str());
    for (core::Phase p : shown) {
      std::printf(" %11.3f", d < totals.size() ? totals[d][static_cast<int>(p)] : 0.0);
    }
    std::printf("\n");
    if (d < totals.size()) all_reduce += totals[d][static_cast<int>(core::Phase::kAllReduce)];
  }
  if (steps > 0) {
    std::printf("All-reduce (%s): %.3f ms per step on average over the devices\n",
                strategy.all_reduce().name().c_str(),
                1e3 * all_reduce / static_cast<double>(strategy.devices().size()) /
                    static_cast<double>(steps));
  }
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Mirrored training of a real model on Fashion-MNIST on N virtual GPUs (CPU-backed or CUDA)");
  add_training_flags(cmd, o);
  add_text_flag(cmd, "--history", o.history_file, "Write the run's history as JSON to this file")
      ->type_name("FILE");
  add_text_flag(cmd, "--trace", o.trace_file,
                "Write every phase of every step as Chrome trace JSON (open in ui.perfetto.dev)")
      ->type_name("FILE");
  add_text_flag(cmd, "--checkpoint-dir", o.checkpoint_dir,
                "Save checkpoints in this folder (made if missing): safetensors weights beside a "
                "JSON state, each file written whole (docs/checkpoints.md). One is saved at the "
                "end of the run and on Ctrl-C")
      ->type_name("DIR");
  add_steps_or_epochs_flag(cmd, "--checkpoint-every", o.checkpoint_every, std::int64_t{1} << 40,
                           "Save a checkpoint every N global steps, or every N epochs with an e "
                           "(500, 2e); default: every epoch");
  add_whole_number_flag(cmd, "--keep", o.keep, 0, 1'000'000,
                        "Keep only the newest N checkpoints in the folder (0: all)");
  add_text_flag(cmd, "--resume", o.resume_dir,
                "Go on from the newest checkpoint in this folder, bit for bit: its model, "
                "optimizer, learning rate, loss scaling, seed and data; the devices, batch, "
                "epochs, --max-steps and all-reduce may change. New checkpoints go there too, "
                "unless --checkpoint-dir names another folder")
      ->type_name("DIR");
  add_worker_flags(cmd, o);
  cmd->parse_complete_callback([cmd, &o] {
    o.given.clear();
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) o.given.insert(option->get_name());
    }
  });
  return cmd;
}

namespace {

// The end of a run, as it ended: the report on stdout, then the files.
struct RunEnd {
  int status = 0;            // 0, 1 (diverged or failed) or 128 + signal
  std::string stop_message;  // why it ended early, in words, also in the history
};

// The history's "config": the run's settings as every settings file has them, with what the
// run made of them (the device count, the workers, the all-reduce auto chose, the examples).
nlohmann::json run_config(const TrainOptions& o, int gpus, std::size_t global,
                          const core::MirroredStrategy& strategy, std::size_t train_examples) {
  nlohmann::json config = core::settings_json(o.settings);
  config["gpus"] = gpus;
  config["workers"] = strategy.num_workers();
  config["replicas_in_sync"] = strategy.num_replicas_in_sync();
  config["global_batch"] = global;
  config["allreduce"] = strategy.all_reduce().name();
  config["train_examples"] = train_examples;
  config["faults"] = o.faults.describe();
  return config;
}

// After a device failed: where the run can go on from.
std::string resume_advice(const TrainCheckpoints& checkpoints) {
  if (!checkpoints.last()) {
    return checkpoints.enabled()
               ? "No checkpoint was saved before it, so the run starts again from step 0"
               : "Without --checkpoint-dir there is no checkpoint to go on from: the run starts "
                 "again from step 0";
  }
  return "The run can go on from its last checkpoint, of step " +
         std::to_string(checkpoints.last()->step) + ": mirrorlab train --resume " +
         checkpoints.folder();
}

// "try a lower --lr (now 10) or a larger --batch-per-replica (now 1)": what the user can change.
std::string divergence_advice(const TrainOptions& o) {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", o.settings.optimizer.learning_rate);
  return std::string("Try a lower --lr (now ") + lr + "), a larger --batch-per-replica (now " +
         std::to_string(o.settings.batch_per_replica) + ")" +
         (o.settings.optimizer.kind == core::OptimizerKind::kAdam
              ? ""
              : ", or --optimizer adam, which adapts its step size");
}

// The same, after a check found `where`; a NaN that --nan-at put there needs no such advice.
std::string divergence_advice(const TrainOptions& o, const core::NonFiniteValue& where) {
  for (const core::NanInGradient& n : o.faults.nans) {
    if (n.device == where.replica && n.step == where.step && !where.in_loss()) {
      return "It is the NaN that --nan-at /gpu:" + std::to_string(n.device) + "@" +
             std::to_string(n.step) +
             " put into that gradient: the check found it on its replica, before the all-reduce "
             "could carry it to every replica's weights";
    }
  }
  return divergence_advice(o);
}

class TrainProgress : public KerasProgress {
 public:
  TrainProgress(const TrainOptions& o, std::vector<std::string>* warnings)
      : KerasProgress(stdout, isatty(fileno(stdout)) != 0), options_(&o), warnings_(warnings) {}
  void on_loss_growth(const core::LossGrowth& g) override {
    char text[256];
    std::snprintf(text, sizeof text,
                  "the mean loss of step %lld is %.4g, more than %.0f times the %.4g of step 1: "
                  "training is diverging. ",
                  static_cast<long long>(g.step), g.loss, core::kLossGrowthFactor, g.first_loss);
    warnings_->push_back(text + divergence_advice(*options_) + ".");
    interrupt_line();
    std::printf("WARNING: %s\n", warnings_->back().c_str());
  }

 private:
  const TrainOptions* options_;
  std::vector<std::string>* warnings_;
};

// How TensorFlow splits each epoch's short last batch, and how the loss weighs it.
void print_last_batch(std::size_t examples, int gpus, const core::StrategyOptions& options) {
  const std::vector<core::Shard> shards =
      core::split_global_batch(examples, gpus, (examples + gpus - 1) / gpus);
  std::string split;
  for (const core::Shard& s : shards) {
    split += (split.empty() ? "" : " + ") + std::to_string(s.count);
  }
  if (gpus > 8) split = std::to_string(shards[0].count) + " per replica until none are left";
  std::printf("Last batch of each epoch: %zu examples, split %s, as TensorFlow splits it\n",
              examples, split.c_str());
  if (shards.front().count == shards.back().count) return;            // even: both scalings agree
  if (options.loss_scaling == core::LossScaling::kShardMean) return;  // said at the start
  std::printf("%s\n", options.loss_scaling == core::LossScaling::kReplicaMean
                          ? "Loss scaling replica-mean, as Keras' model.fit: on that batch each "
                            "replica's mean loss weighs the same (--loss-scaling batch-mean: each "
                            "example)"
                          : "Loss scaling batch-mean: on that batch each example weighs the same, "
                            "as on one device (Keras' model.fit weighs each replica's mean the "
                            "same)");
}

// Says where the run goes on from and what changed, then restores it: false (said on stderr)
// when the checkpoint does not fit this run (other data, another version's shuffle).
bool resume_run(const ResumePoint& resume, const core::CheckpointConfig& now,
                core::MirroredStrategy& strategy, core::FitLoop& loop) {
  const core::FitPosition& p = resume.checkpoint.position;
  std::printf("Resuming from %s: step %lld, ", resume.entry.state.c_str(),
              static_cast<long long>(p.history.steps));
  if (p.in_epoch) {
    std::printf("inside epoch %d (%lld steps, %zu of %zu examples done)\n", p.epoch,
                static_cast<long long>(p.step_in_epoch), p.examples_in_epoch,
                now.settings.train_examples);
  } else {
    std::printf("after epoch %d\n", p.epoch);
  }
  for (const std::string& change : core::checkpoint_changes(resume.checkpoint.config, now)) {
    std::printf("Changed: %s\n", change.c_str());
  }
  std::fflush(stdout);
  try {
    core::restore_checkpoint(resume.checkpoint, resume.entry.state, now, strategy, loop);
  } catch (const core::CheckpointError& e) {
    std::fprintf(stderr, "mirrorlab train: --resume: %s\n", e.what());
    return false;
  }
  return true;
}

}  // namespace

int run_train(const TrainOptions& options) {
  // A resumed run takes its settings from its checkpoint first; then every check is the same.
  TrainOptions o = options;
  // Alone, or one of several workers (mpirun -np W, app/workers.h): worker 0 says what is wrong.
  const vgpu::Launch launch = vgpu::launched_by();
  const bool chief = launch.rank == 0;
  if (const std::string problem = check_launch(o.settings.workers, launch, mpi_built());
      !problem.empty()) {
    if (chief) std::fprintf(stderr, "mirrorlab train: %s\n", problem.c_str());
    return 2;
  }
  const std::unique_ptr<vgpu::WorkerGroup> workers =
      start_workers(launch, o.worker_timeout_seconds);
  std::optional<ResumePoint> resume;
  int gpus = 0;
  OutputFiles outputs;  // worker 0 writes the files
  TrainCheckpoints checkpoints;
  std::string problem = workers ? not_for_workers(o) : "";
  if (problem.empty()) problem = prepare_resume(o, &resume);
  if (problem.empty()) problem = check_train_options(o, &gpus, chief ? &outputs : nullptr);
  if (problem.empty()) problem = checkpoints.open(o);
  if (workers) problem = agree_to_train(*workers, problem, train_flag_lines(o));
  if (!problem.empty()) {
    if (chief) {
      std::fprintf(stderr, "mirrorlab train: %s\nRun 'mirrorlab train --help' for the flags.\n",
                   problem.c_str());
    }
    if (workers) finish_workers(*workers);
    return 2;
  }
  if (workers && !announce_worker(*workers)) return 1;
  const vgpu::TimePoint trace_origin = vgpu::Clock::now();  // met at the exchange above
  core::set_blas_single_threaded();

  // Devices and strategy first: a mistake there (no GPU visible, an all-reduce that cannot run
  // on these devices, a model that does not fit) is reported before the dataset's second of
  // loading.
  vgpu::DeviceRegistry registry;
  const std::vector<vgpu::Device*>& devices =
      make_devices(plan_devices(o.settings.devices, gpus), registry);
  core::EventStore events;
  // On GPUs the step across workers is NCCL's, between the processes, where NCCL can serve.
  std::string no_nccl;
  const std::unique_ptr<vgpu::WorkerGroup> on_gpus =
      workers ? nccl_workers(*workers, devices, &no_nccl) : nullptr;
  if (!no_nccl.empty()) std::printf("NCCL across workers not used: %s\n", no_nccl.c_str());
  std::unique_ptr<core::MirroredStrategy> made;
  try {
    made =
        std::make_unique<core::MirroredStrategy>(devices, core::strategy_options(o.settings),
                                                 &events, on_gpus ? on_gpus.get() : workers.get());
  } catch (const std::invalid_argument& e) {  // e.g. --allreduce nccl where NCCL cannot run
    std::fflush(stdout);                      // after the devices' line
    std::fprintf(stderr, "mirrorlab train: %s\n", e.what());
    return 2;
  }
  core::MirroredStrategy& strategy = *made;
  core::FaultInjector faults;
  if (!o.faults.empty()) {
    try {
      faults.attach(strategy, o.faults);  // e.g. a slowed CUDA GPU
    } catch (const std::invalid_argument& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "mirrorlab train: these faults cannot happen: %s\n", e.what());
      return 2;
    }
  }
  const int replicas = strategy.num_replicas_in_sync();
  if (workers) {
    // What TensorFlow logs for MultiWorkerMirroredStrategy is not checked against TensorFlow
    // yet (docs/multi-worker.md): mirrorlab's own words only.
    std::printf("Multi-worker mirrored training: %d workers x %d device%s = %d replicas in sync\n",
                workers->size(), gpus, gpus == 1 ? "" : "s", replicas);
  } else {
    // TensorFlow's own log lines, as it writes them, then mirrorlab's.
    std::printf("INFO:tensorflow:Using MirroredStrategy with devices %s\n",
                strategy.device_tuple().c_str());
  }
  std::printf(
      "%s", model_summary(strategy.replica(0).model(), core::to_string(o.settings.model)).c_str());
  if (!workers && !strategy.tensorflow_all_reduce_log().empty()) {
    std::printf("INFO:tensorflow:%s\n", strategy.tensorflow_all_reduce_log().c_str());
  }
  for (const std::string& note : strategy.all_reduce_notes()) std::printf("%s\n", note.c_str());

  const core::FashionMnist data = load_training_data(o);
  if (const std::string different = workers ? check_same_data(*workers, data) : "";
      !different.empty()) {
    if (chief) std::fprintf(stderr, "mirrorlab train: %s\n", different.c_str());
    finish_workers(*workers);
    return 2;
  }
  const core::OptimizerConfig& optimizer = o.settings.optimizer;
  const std::size_t global = o.settings.batch_per_replica * static_cast<std::size_t>(replicas);
  char momentum[48] = "";
  if (optimizer.kind == core::OptimizerKind::kSgd) {
    std::snprintf(momentum, sizeof momentum, " (momentum %g%s)",
                  static_cast<double>(optimizer.momentum),
                  optimizer.momentum == 0 ? ", as Keras' SGD" : "");
  }
  std::printf("Global batch %zu = %zu per replica x %d replicas%s; %s optimizer%s, lr %g\n", global,
              o.settings.batch_per_replica, replicas,
              workers ? (" (" + std::to_string(gpus) + (gpus == 1 ? " device x " : " devices x ") +
                         std::to_string(workers->size()) + " workers)")
                            .c_str()
                      : "",
              core::to_string(optimizer.kind), momentum,
              static_cast<double>(optimizer.learning_rate));
  if (replicas > 1 && data.train.size() % global != 0) {
    print_last_batch(data.train.size() % global, replicas, strategy.options());
  }
  if (strategy.options().loss_scaling == core::LossScaling::kShardMean && replicas > 1) {
    std::printf(
        "Loss scaling shard-mean: each replica's own mean, not divided by the %d "
        "replicas, so the summed gradients are %d times too large (the custom-loop "
        "mistake; model.fit's is replica-mean)\n",
        replicas, replicas);
  }
  std::vector<std::string> warnings;
  TrainProgress progress(o, &warnings);
  core::FitOptions fit = core::fit_options(o.settings);
  vgpu::WorkerGroup* group = workers.get();
  // Every worker stops after the same step (app/workers.h): any one asked, all stop.
  const auto stop_asked = [group] { return agreed_stop(group, interrupt_signal() != 0); };
  fit.stop_requested = stop_asked;
  core::FitLoop loop(strategy, data.train, &data.test, fit, &progress);
  std::vector<std::string> write_errors;
  if (checkpoints.enabled()) {
    const core::CheckpointConfig config =
        core::checkpoint_config(o.settings, strategy, loop, core::dataset_crc32(data.train));
    if (resume && !resume_run(*resume, config, strategy, loop)) return 2;
    if (resume) checkpoints.set_last(resume->entry);
    checkpoints.start(strategy, loop, config);
  }
  const std::int64_t steps_before = loop.history().steps;  // made by the run resumed
  if (!o.faults.empty()) {
    const std::string problem = check_fault_steps(o.faults, steps_before, loop.steps_in_all());
    if (!problem.empty()) {
      std::fflush(stdout);
      std::fprintf(stderr, "mirrorlab train: %s\n", problem.c_str());
      return 2;
    }
    std::printf("Faults: %s\n", o.faults.describe().c_str());
  }
  // A checkpoint's line goes below the progress bar; a failed save is said and the run goes on.
  auto saved = [&](const std::function<std::string()>& save) {
    try {
      if (const std::string path = save(); !path.empty()) {
        progress.interrupt_line();
        std::printf("Checkpoint saved: %s (step %lld)\n", path.c_str(),
                    static_cast<long long>(loop.history().steps));
      }
    } catch (const core::OutputFileError& e) {
      progress.interrupt_line();
      std::fflush(stdout);
      std::fprintf(stderr, "mirrorlab train: error: checkpoint not saved: %s\n", e.what());
      write_errors.push_back(std::string("checkpoint not saved: ") + e.what());
    }
  };
  RunEnd end;
  try {
    while (!loop.done()) {
      if (stop_asked()) {
        loop.stop(core::StopReason::kInterrupted);
        break;
      }
      loop.step();
      saved([&] { return checkpoints.after_step(); });
    }
    saved([&] { return checkpoints.at_end(); });  // finished, step limit or Ctrl-C
  } catch (const core::DivergedError& e) {
    // The step did not count: the weights, the history and the trace are those of the steps
    // before it, and they are saved.
    loop.stop(core::StopReason::kDiverged);  // closes the epoch's progress line
    end.status = 1;
    end.stop_message = std::string(e.what()) + ". " + divergence_advice(o, e.where()) + ".";
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", end.stop_message.c_str());
    // Another worker may wait in this step's all-reduce: no exchange can follow. This worker
    // leaves; the others see it gone (virtualgpu/workers/worker_watch.h) and stop, naming it.
    if (workers) return end.status;
  } catch (const core::DeviceFailed& e) {
    // As with a GPU lost mid-step: nothing of the step counted, no checkpoint is written (the
    // device is gone); the run goes on from the last one.
    loop.stop(core::StopReason::kFailed);
    end.status = 1;
    end.stop_message = std::string(e.what()) + ". " + resume_advice(checkpoints);
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", end.stop_message.c_str());
  }
  const core::History& history = loop.history();
  if (history.stop_reason == core::StopReason::kInterrupted) {
    const int signal = interrupt_signal();
    end.status = signal != 0 ? interrupt_exit_status(signal) : 1;
    end.stop_message = std::string("stopped by ") +
                       (signal != 0 ? interrupt_name(signal) : "another worker's signal") +
                       " after step " + std::to_string(history.steps) + " (epoch " +
                       std::to_string(loop.epoch()) + ", step " +
                       std::to_string(loop.step_in_epoch()) + " of " +
                       std::to_string(loop.steps_per_epoch()) + ")";
    std::printf("Interrupted: %s.\n", end.stop_message.c_str());
  }

  if (history.stopped_by_max_steps) {
    std::printf("Stopped after --max-steps %lld global steps.\n",
                static_cast<long long>(o.settings.max_steps));
  }
  const core::Metrics test = history.epochs.empty() || !history.epochs.back().has_validation
                                 ? core::Metrics{}
                                 : history.epochs.back().validation;
  if (test.examples > 0) {
    std::printf("Test accuracy: %.4f, test loss: %.4f (%lld test images)\n", test.accuracy,
                test.loss, static_cast<long long>(test.examples));
  } else {
    std::printf("Test accuracy: not evaluated (the run stopped before the end of its epoch)\n");
  }
  std::printf("Training: %.0f images/s over %lld steps\n",
              history.train_seconds > 0 ? history.train_examples / history.train_seconds : 0.0,
              static_cast<long long>(history.steps));
  const std::vector<core::PhaseTotals> totals = events.phase_totals();
  print_phase_table(strategy, totals, history.steps - steps_before);
  std::printf("Peak memory:");
  for (vgpu::Device* d : devices) {
    std::printf(" %s %.1f of %zu MiB;", d->name().c_str(),
                static_cast<double>(d->memory().peak()) / vgpu::kMiB,
                d->memory().limit() / vgpu::kMiB);
  }
  std::printf("\n");

  // Every worker's devices and events, to worker 0's files (an exchange: with the same flags,
  // every worker comes here, or none).
  std::vector<std::string> names;
  for (vgpu::Device* d : devices) names.push_back(d->name());
  std::vector<core::TraceProcess> trace = {
      core::TraceProcess{"", names, events.trace_events(trace_origin)}};
  nlohmann::json worker_parts = nlohmann::json::array();
  if (workers && (!o.history_file.empty() || !o.trace_file.empty())) {
    gather_workers(*workers, devices, totals, &worker_parts, &trace);
  }
  if (!o.history_file.empty() && outputs.find("--history") != nullptr) {
    RunSummary summary;
    summary.config = run_config(o, gpus, global, strategy, data.train.size());
    summary.history = &history;
    summary.test = test;
    double sum_squares = 0;
    for (float w : strategy.replica(0).model().params_to_host()) sum_squares += double{w} * w;
    summary.weights_l2 = std::sqrt(sum_squares);
    for (vgpu::Device* d : devices) {
      summary.device_names.push_back(d->name());
      summary.peak_memory_bytes.push_back(d->memory().peak());
    }
    summary.phase_seconds = totals;
    summary.stop_message = end.stop_message;
    summary.warnings = warnings;
    summary.workers = worker_parts;
    if (std::string e = write_output(outputs, "--history", to_json(summary).dump(2) + "\n");
        !e.empty()) {
      write_errors.push_back(e);
    } else {
      std::printf("History written to %s\n", o.history_file.c_str());
    }
  }
  if (!o.trace_file.empty() && outputs.find("--trace") != nullptr) {
    if (std::string e = write_output(outputs, "--trace", core::chrome_trace(trace)); !e.empty()) {
      write_errors.push_back(e);
    } else {
      std::printf("Trace written to %s (open it in ui.perfetto.dev)\n", o.trace_file.c_str());
    }
  }
  for (const std::string& e : write_errors) {
    std::fflush(stdout);
    std::fprintf(stderr, "mirrorlab train: error: %s\n", e.c_str());
  }
  if (!write_errors.empty() && end.status == 0) end.status = 1;
  if (workers) finish_workers(*workers);
  return end.status;  // main() checks that stdout took everything
}

}  // namespace mirrorlab::app
