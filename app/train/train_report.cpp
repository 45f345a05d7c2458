#include "app/train/train_report.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>

#include "app/output/history_json.h"
#include "app/output/printed_text.h"
#include "app/train/workers.h"
#include "core/session/text/keras_summary.h"

namespace mirrorlab::app {
namespace {

// "Try a lower --lr (now 10), a larger --batch-per-replica (now 1)": what the user can change.
std::string divergence_advice(const TrainOptions& o) {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", o.settings.optimizer.learning_rate);
  return std::string("Try a lower --lr (now ") + lr + "), a larger --batch-per-replica (now " +
         std::to_string(o.settings.batch_per_replica) + ")" +
         (o.settings.optimizer.kind == core::OptimizerKind::kAdam
              ? ""
              : ", or --optimizer adam, which adapts its step size");
}

// How TensorFlow splits each epoch's short last batch, and how the loss weighs it. `only_batch`:
// it is the epoch's first batch too, which Keras' model.fit cannot take when it splits unevenly.
void print_last_batch(std::size_t examples, std::size_t global, int gpus, bool only_batch,
                      const core::StrategyOptions& options) {
  const std::vector<core::Shard> shards =
      core::split_global_batch(examples, gpus, (examples + gpus - 1) / gpus);
  std::string split;
  for (const core::Shard& s : shards) {
    split += (split.empty() ? "" : " + ") + std::to_string(s.count);
  }
  if (gpus > 8) split = std::to_string(shards[0].count) + " per replica until none are left";
  print_wrapped(
      formatted("Last batch of each epoch: %zu examples, split %s, as TensorFlow splits it",
                examples, split.c_str()));
  const bool uneven = shards.front().count != shards.back().count;
  if (only_batch && uneven) {
    print_wrapped(
        "Keras 3.15's model.fit fails on this: its first global batch is uneven, and building "
        "the model on it stops with an AddN of unequal shapes (measured); mirrorlab trains it");
  }
  if (options.loss_scaling == core::LossScaling::kGlobalBatch) {
    print_wrapped(formatted(
        "Loss scaling global-batch, as compute_average_loss(global_batch_size=%zu): on that "
        "batch each example weighs 1/%zu, so its step is %zu/%zu of a full batch's",
        global, global, examples, global));
    return;
  }
  if (!uneven) return;                                                // even: both scalings agree
  if (options.loss_scaling == core::LossScaling::kShardMean) return;  // said at the start
  if (options.loss_scaling == core::LossScaling::kReplicaMean) {
    // Keras fails on an uneven first batch (said above): only a later one is weighed its way.
    print_wrapped(formatted(
        "Loss scaling replica-mean, as Keras' model.fit%s: on that batch each replica's mean "
        "loss weighs the same (--loss-scaling batch-mean: each example)",
        only_batch ? " weighs a short batch after the first" : ""));
    return;
  }
  print_wrapped(
      "Loss scaling batch-mean: on that batch each example weighs the same, as on one device "
      "(Keras' model.fit weighs each replica's mean the same)");
}

void print_phase_table(const core::MirroredStrategy& strategy,
                       const std::vector<core::PhaseTotals>& totals, std::int64_t steps,
                       const core::HiddenAllReduce& hidden) {
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
    const double per_step =
        1e3 / static_cast<double>(strategy.devices().size()) / static_cast<double>(steps);
    print_wrapped(formatted("All-reduce (%s): %.3f ms per step on average over the devices",
                            strategy.all_reduce().name().c_str(), all_reduce * per_step));
    const std::size_t packs = strategy.packs().size();
    if (packs > 1 && strategy.num_local_replicas() > 1) {
      print_wrapped(
          formatted("in %zu packs a step, %s: %.3f ms of it (%.0f%%) while backward still ran",
                    packs,
                    strategy.options().packs.overlap ? "each started as backward wrote it"
                                                     : "after backward (--no-overlap)",
                    hidden.hidden * per_step,
                    hidden.all_reduce > 0 ? 100 * hidden.hidden / hidden.all_reduce : 0.0),
          "  ", "    ");
    }
  }
}

// On CUDA devices: what a step asked of the GPUs (launches, waits, copies, events), all devices
// together, the mean of the steps this run made. Their count, not the card's speed, is what a
// small model's step costs on a GPU.
void print_gpu_work(const TrainRun& run, std::int64_t steps) {
  if (steps <= 0 || run.devices.empty() || !run.devices[0]->is_cuda()) return;
  const vgpu::GpuWorkTable table =
      vgpu::difference(vgpu::process_gpu_work_counts().snapshot(), run.gpu_work_before);
  std::printf("\n");
  print_wrapped(
      formatted("GPU work per training step (all %zu devices of this worker, the mean of "
                "%lld steps; counted where mirrorlab calls CUDA and cuBLAS)",
                run.devices.size(), static_cast<long long>(steps)));
  std::printf("%s", vgpu::format_gpu_work(table, static_cast<double>(steps)).c_str());
  print_wrapped(
      "(host waits: the host waiting for a GPU; stream waits: a GPU's stream waiting for "
      "another's event; graphs launched: captured steps)");
  if (run.strategy == nullptr) return;
  if (!run.strategy->options().cuda_graphs) {
    print_wrapped("CUDA graphs: off (--no-cuda-graphs): every kernel launched by the host");
    return;
  }
  int captured = 0;
  const int replicas = run.strategy->num_local_replicas();
  for (int r = 0; r < replicas; ++r) {
    const core::Replica& replica = run.strategy->replica(r);
    if (replica.step_captured()) ++captured;
    if (!replica.graphs_off().empty()) {
      print_wrapped(formatted("CUDA graphs on %s: %s",
                              run.devices[static_cast<std::size_t>(r)]->name().c_str(),
                              replica.graphs_off().c_str()));
    }
  }
  print_wrapped(formatted(
      "CUDA graphs: %d of %d replicas ran their forward and backward as one captured graph a "
      "step at the end (--no-cuda-graphs: launched kernel by kernel)",
      captured, replicas));
}

// The same counts as a JSON object for the trace: {"forward": {"kernels": 14, ...}, ...}, per
// step; empty without CUDA devices or steps.
std::string gpu_work_json(const TrainRun& run, std::int64_t steps) {
  if (steps <= 0 || run.devices.empty() || !run.devices[0]->is_cuda()) return "";
  const vgpu::GpuWorkTable table =
      vgpu::difference(vgpu::process_gpu_work_counts().snapshot(), run.gpu_work_before);
  nlohmann::json out = nlohmann::json::object();
  for (int p = 0; p < vgpu::kNumWorkPhases; ++p) {
    if (static_cast<vgpu::WorkPhase>(p) == vgpu::WorkPhase::kOther) continue;
    nlohmann::json row = nlohmann::json::object();
    for (int w = 0; w < vgpu::kNumGpuWork; ++w) {
      std::string key = vgpu::to_string(static_cast<vgpu::GpuWork>(w));  // "cuBLAS calls"
      for (char& c : key) c = c == ' ' ? '_' : static_cast<char>(std::tolower(c));
      row[key] = static_cast<double>(table[p][w]) / static_cast<double>(steps);
    }
    out[vgpu::to_string(static_cast<vgpu::WorkPhase>(p))] = row;
  }
  return out.dump();
}

// The last epoch's validation, or none when the run stopped inside its epoch.
core::Metrics last_test(const core::History& history) {
  return history.epochs.empty() || !history.epochs.back().has_validation
             ? core::Metrics{}
             : history.epochs.back().validation;
}

// The history's "config": the run's settings as every settings file has them, with what the
// run made of them (the device count, the workers, the all-reduce auto chose, the examples).
nlohmann::json run_config(const TrainRun& run, std::size_t train_examples) {
  const core::MirroredStrategy& strategy = *run.strategy;
  nlohmann::json config = core::settings_json(run.o.settings);
  config["gpus"] = run.gpus;
  config["workers"] = strategy.num_workers();
  config["replicas_in_sync"] = strategy.num_replicas_in_sync();
  config["global_batch"] =
      run.o.settings.batch_per_replica * static_cast<std::size_t>(strategy.num_replicas_in_sync());
  config["allreduce"] = strategy.all_reduce().name();
  config["train_examples"] = train_examples;
  config["faults"] = run.o.faults.describe();
  return config;
}

}  // namespace

// A line TensorFlow logs, as it logs it, on stderr as TensorFlow writes it, and marked: the
// student reading the run must not take it for TensorFlow's own (no TensorFlow runs here).
void print_tensorflow_log(const std::string& line) {
  std::fflush(stdout);  // in order with what came before, on a terminal
  std::fprintf(stderr, "%sINFO:tensorflow:%s\n", kAsTensorflowLogs, line.c_str());
}

void print_strategy(const TrainRun& run) {
  core::MirroredStrategy& strategy = *run.strategy;  // its replicas' models are not const
  const vgpu::WorkerGroup* workers = run.launch.workers();
  if (workers) {
    // What TensorFlow logs for MultiWorkerMirroredStrategy is not checked against TensorFlow
    // yet (docs/multi-worker.md): mirrorlab's own words only.
    print_wrapped(formatted(
        "Multi-worker mirrored training: %d workers x %d device%s = %d replicas in sync",
        workers->size(), run.gpus, run.gpus == 1 ? "" : "s", strategy.num_replicas_in_sync()));
  } else {
    // TensorFlow's own log lines, as it writes them, then mirrorlab's.
    print_tensorflow_log("Using MirroredStrategy with devices " + strategy.device_tuple());
  }
  std::printf(
      "%s", core::model_summary(strategy.replica(0).model(), core::to_string(run.o.settings.model))
                .c_str());
  if (!workers && !strategy.tensorflow_all_reduce_log().empty()) {
    print_tensorflow_log(strategy.tensorflow_all_reduce_log());
  }
  for (const std::string& note : strategy.all_reduce_notes()) print_wrapped(note);
  const core::PackOptions& packs = strategy.options().packs;
  if (strategy.packs().size() > 1 || packs.bytes_per_pack > 0 || packs.num_packs > 0) {
    print_wrapped(
        formatted("Gradient packs: %s", core::describe_packs(strategy.packs(), packs).c_str()));
    if (packs.num_packs > 0) {
      print_wrapped(
          formatted(
              "(num_packs is TensorFlow's NcclAllReduce and HierarchicalCopyAllReduce option: "
              "there TensorFlow 2.21 logs \"batch_all_reduce: %d all-reduces with algorithm = ..., "
              "num_packs = %d\"; with num_packs 2 to 4 it failed on CPU devices, run here)",
              strategy.replica(0).model().num_weight_tensors(), packs.num_packs),
          "  ", "    ");
    }
  }
}

void print_batches(const TrainRun& run, std::size_t train_examples) {
  const core::MirroredStrategy& strategy = *run.strategy;
  const core::OptimizerConfig& optimizer = run.o.settings.optimizer;
  const int replicas = strategy.num_replicas_in_sync();
  const std::size_t global = run.o.settings.batch_per_replica * static_cast<std::size_t>(replicas);
  char momentum[48] = "";
  if (optimizer.kind == core::OptimizerKind::kSgd) {
    std::snprintf(momentum, sizeof momentum, " (momentum %g%s)",
                  static_cast<double>(optimizer.momentum),
                  optimizer.momentum == 0 ? ", as Keras' SGD" : "");
  }
  const vgpu::WorkerGroup* workers = run.launch.workers();
  print_wrapped(formatted(
      "Global batch %zu = %zu per replica x %d replicas%s; %s optimizer%s, lr %g", global,
      run.o.settings.batch_per_replica, replicas,
      workers ? (" (" + std::to_string(run.gpus) + (run.gpus == 1 ? " device x " : " devices x ") +
                 std::to_string(workers->size()) + " workers)")
                    .c_str()
              : "",
      core::to_string(optimizer.kind), momentum, static_cast<double>(optimizer.learning_rate)));
  const bool short_batch_differs =
      replicas > 1 || strategy.options().loss_scaling == core::LossScaling::kGlobalBatch;
  if (short_batch_differs && train_examples % global != 0) {
    print_last_batch(train_examples % global, global, replicas, train_examples < global,
                     strategy.options());
  }
  if (strategy.options().loss_scaling == core::LossScaling::kShardMean && replicas > 1) {
    print_wrapped(
        formatted("Loss scaling shard-mean: each replica's own mean, not divided by the %d "
                  "replicas, so the summed gradients are %d times too large (the custom-loop "
                  "mistake; model.fit's is replica-mean)",
                  replicas, replicas));
  }
}

TrainProgress::TrainProgress(TrainRun& run)
    : KerasProgress(stdout, isatty(fileno(stdout)) != 0), run_(&run) {}

void TrainProgress::on_loss_growth(const core::LossGrowth& g) {
  run_->warnings.push_back(
      formatted("the mean loss of step %lld is %.4g, more than %.0f times the %.4g of step 1: "
                "training is diverging. ",
                static_cast<long long>(g.step), g.loss, core::kLossGrowthFactor, g.first_loss) +
      divergence_advice(run_->o) + ".");
  interrupt_line();
  print_wrapped(formatted("WARNING: %s", run_->warnings.back().c_str()));
}

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

void print_results(const TrainRun& run, const core::FitLoop& loop,
                   const std::vector<core::PhaseTotals>& totals, std::int64_t steps_made) {
  const core::History& history = loop.history();
  if (history.stopped_by_max_steps) {
    print_wrapped(formatted("Stopped after --max-steps %lld global steps.",
                            static_cast<long long>(run.o.settings.max_steps)));
  }
  const core::Metrics test = last_test(history);
  if (test.examples > 0) {
    print_wrapped(formatted("Test accuracy: %.4f, test loss: %.4f (%lld test images)",
                            test.accuracy, test.loss, static_cast<long long>(test.examples)));
  } else {
    print_wrapped("Test accuracy: not evaluated (the run stopped before the end of its epoch)");
  }
  std::string rate =
      formatted("Training: %.0f images/s over %lld steps",
                history.train_seconds > 0 ? history.train_examples / history.train_seconds : 0.0,
                static_cast<long long>(history.steps));
  // The first step pays what is made once; after it, the rate a longer run would see.
  const double later_seconds = history.train_seconds - loop.first_step_seconds();
  const double later_examples =
      static_cast<double>(history.train_examples - loop.first_step_examples());
  if (steps_made > 1 && history.steps == steps_made && later_seconds > 0 && later_examples > 0 &&
      loop.first_step_examples() > 0) {
    rate += formatted(
        "; %.0f after the first, which took %.0f ms (made once: kernels loaded, buffers sized%s)",
        later_examples / later_seconds, 1e3 * loop.first_step_seconds(),
        run.devices.empty() || !run.devices[0]->is_cuda() ? "" : ", cuBLAS started");
  }
  print_wrapped(rate);
  print_phase_table(*run.strategy, totals, steps_made, run.events.hidden_all_reduce());
  print_gpu_work(run, steps_made);
  std::string peaks;
  for (const vgpu::Device* d : run.devices) {
    peaks += formatted("%s %s %.1f of %zu MiB", d == run.devices.front() ? "" : ";",
                       d->name().c_str(), static_cast<double>(d->memory().peak()) / vgpu::kMiB,
                       d->memory().limit() / vgpu::kMiB);
  }
  print_wrapped("Peak memory:" + peaks);
}

void write_run_files(TrainRun& run, const core::FitLoop& loop, const RunEnd& end,
                     const std::vector<core::PhaseTotals>& totals, std::size_t train_examples) {
  const TrainOptions& o = run.o;
  std::vector<std::string> names;
  for (const vgpu::Device* d : run.devices) names.push_back(d->name());
  std::vector<core::TraceProcess> trace = {
      core::TraceProcess{"", names, run.events.trace_events(run.trace_origin),
                         gpu_work_json(run, loop.history().steps - run.steps_before)}};
  nlohmann::json worker_parts = nlohmann::json::array();
  if (run.launch.workers() && (!o.history_file.empty() || !o.trace_file.empty())) {
    gather_workers(*run.launch.workers(), run.devices, totals, &worker_parts, &trace);
  }
  if (!o.history_file.empty() && run.outputs.find("--history") != nullptr) {
    RunSummary summary;
    summary.config = run_config(run, train_examples);
    summary.history = &loop.history();
    summary.test = last_test(loop.history());
    double sum_squares = 0;
    for (float w : run.strategy->replica(0).model().params_to_host()) {
      sum_squares += double{w} * w;
    }
    summary.weights_l2 = std::sqrt(sum_squares);
    for (const vgpu::Device* d : run.devices) {
      summary.device_names.push_back(d->name());
      summary.peak_memory_bytes.push_back(d->memory().peak());
    }
    summary.phase_seconds = totals;
    summary.stop_message = end.stop_message;
    summary.warnings = run.warnings;
    summary.workers = worker_parts;
    if (std::string e = write_output(run.outputs, "--history", to_json(summary).dump(2) + "\n");
        !e.empty()) {
      run.write_errors.push_back(e);
    } else {
      std::printf("History written to %s\n", o.history_file.c_str());
    }
  }
  if (!o.trace_file.empty() && run.outputs.find("--trace") != nullptr) {
    if (std::string e = write_output(run.outputs, "--trace", core::chrome_trace(trace));
        !e.empty()) {
      run.write_errors.push_back(e);
    } else {
      std::printf("Trace written to %s (open it in ui.perfetto.dev)\n", o.trace_file.c_str());
    }
  }
}

}  // namespace mirrorlab::app
