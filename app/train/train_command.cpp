#include "app/train/train_command.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include "CLI/CLI.hpp"
#include "app/flags/fault_flags.h"
#include "app/flags/flags.h"
#include "app/output/interrupt.h"
#include "app/output/printed_text.h"
#include "app/train/train_report.h"
#include "app/train/train_run.h"
#include "app/train/workers.h"
#include "core/nn/cpu/kernels_cpu.h"
#include "core/session/text/console_text.h"
#include "core/strategy/fit.h"

namespace mirrorlab::app {

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
  return cmd;
}

namespace {

// A refusal after the start: said, on stdout's heels; exit status 2.
int refuse(const std::string& problem) {
  std::fflush(stdout);
  std::fprintf(stderr, "mirrorlab train: %s\n", problem.c_str());
  return 2;
}

// 1. Alone or one of several workers; a resumed run's settings from its checkpoint; the flags
// checked; the checkpoint folder opened. The exit status (said by worker 0) when the run
// cannot start: 2 for a refusal, 1 when this worker could not announce itself.
std::optional<int> start(TrainRun& run) {
  TrainOptions& o = run.o;
  if (!run.launch.start(o.settings.workers, o.worker_timeout_seconds)) return 2;
  std::string problem = run.launch.workers() ? not_for_workers(o) : "";
  if (problem.empty()) problem = prepare_resume(o, &run.resume);
  if (problem.empty()) problem = outputs_clear_of_checkpoints(o);
  if (problem.empty()) {
    problem = check_train_options(o, &run.gpus, run.launch.chief() ? &run.outputs : nullptr);
  }
  if (problem.empty()) problem = run.checkpoints.open(o);
  if (!run.launch.agree(problem, o, "Run 'mirrorlab train --help' for the flags.")) return 2;
  if (!run.launch.announce()) return 1;
  run.trace_origin = vgpu::Clock::now();  // met at the exchange above
  return std::nullopt;
}

// 2. The devices, NCCL across workers where it can serve, the strategy and the faults: before
// the dataset's second of loading, a mistake here (no GPU visible, an all-reduce that cannot run
// on these devices, a model that does not fit) is said at once.
std::optional<int> make_strategy(TrainRun& run) {
  run.devices = make_devices(plan_devices(run.o.settings.devices, run.gpus), run.registry);
  vgpu::WorkerGroup* workers = run.launch.workers();
  std::string no_nccl;
  if (workers) run.on_gpus = nccl_workers(*workers, run.devices, &no_nccl);
  if (!no_nccl.empty()) print_wrapped("NCCL across workers not used: " + no_nccl);
  try {
    run.strategy = std::make_unique<core::MirroredStrategy>(
        run.devices, core::strategy_options(run.o.settings), &run.events,
        run.on_gpus ? run.on_gpus.get() : workers);
  } catch (const std::invalid_argument& e) {  // e.g. --allreduce nccl where NCCL cannot run
    return refuse(e.what());
  }
  if (!run.o.faults.empty()) {
    try {
      run.faults.attach(*run.strategy, run.o.faults);  // e.g. a slowed CUDA GPU
    } catch (const std::invalid_argument& e) {
      return refuse(std::string("these faults cannot happen: ") + e.what());
    }
  }
  return std::nullopt;
}

// 3. Before the first step: the checkpoints started (a resumed run restored), and the faults'
// steps checked against the steps the run will make.
std::optional<int> before_first_step(TrainRun& run, core::FitLoop& loop,
                                     const core::Dataset& train) {
  if (run.checkpoints.enabled()) {
    const core::CheckpointConfig config =
        core::checkpoint_config(run.o.settings, *run.strategy, loop, core::dataset_crc32(train));
    if (run.resume && !resume_run(*run.resume, config, *run.strategy, loop)) return 2;
    if (run.resume) run.checkpoints.set_last(run.resume->entry);
    run.checkpoints.start(*run.strategy, loop, config);
  }
  if (!run.o.faults.empty()) {
    const std::string problem =
        check_fault_steps(run.o.faults, loop.history().steps, loop.steps_in_all());
    if (!problem.empty()) return refuse(problem);
    print_wrapped("Faults: " + run.o.faults.describe());
  }
  return std::nullopt;
}

// 4. The steps, with checkpoints, until the run ends: finished, at its step limit, stopped by a
// signal (on any worker: every worker stops after the same step), diverged or failed.
RunEnd train_steps(TrainRun& run, core::FitLoop& loop, TrainProgress& progress,
                   const std::function<bool()>& stop_asked) {
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
      ++run.checkpoints_not_saved;
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
      saved([&] { return run.checkpoints.after_step(); });
    }
    saved([&] { return run.checkpoints.at_end(); });  // finished, step limit or Ctrl-C
  } catch (const core::DivergedError& e) {
    // The step did not count: the weights, the history and the trace are those of the steps
    // before it, and they are saved.
    loop.stop(core::StopReason::kDiverged);  // closes the epoch's progress line
    end.status = 1;
    end.stop_message = std::string(e.what()) + ". " + divergence_advice(run.o, e.where()) + ".";
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", end.stop_message.c_str());
    // Another worker may wait in this step's all-reduce: no exchange can follow. This worker
    // leaves; the others see it gone (virtualgpu/workers/worker_watch.h) and stop, naming it.
    end.left = run.launch.workers() != nullptr;
  } catch (const core::DeviceFailed& e) {
    // As with a GPU lost mid-step: nothing of the step counted, no checkpoint is written (the
    // device is gone); the run goes on from the last one.
    loop.stop(core::StopReason::kFailed);
    end.status = 1;
    end.stop_message = std::string(e.what()) + ". " + resume_advice(run.checkpoints);
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", end.stop_message.c_str());
  }
  if (loop.history().stop_reason == core::StopReason::kInterrupted) {
    const int signal = interrupt_signal();
    end.status = signal != 0 ? interrupt_exit_status(signal) : 1;
    end.stop_message = std::string("stopped by ") +
                       (signal != 0 ? interrupt_name(signal) : "another worker's signal") +
                       " after step " + std::to_string(loop.history().steps) + " (epoch " +
                       std::to_string(loop.epoch()) + ", step " +
                       std::to_string(loop.step_in_epoch()) + " of " +
                       std::to_string(loop.steps_per_epoch()) + ")";
    print_wrapped("Interrupted: " + end.stop_message + ".");
  }
  return end;
}

}  // namespace

int run_train(const TrainOptions& options) {
  TrainRun run(options);
  if (const std::optional<int> refused = start(run)) return *refused;
  core::set_blas_single_threaded();
  if (const std::optional<int> refused = make_strategy(run)) return *refused;
  print_strategy(run);
  std::string too_many;
  const core::FashionMnist data = load_training_data(run.o, &too_many);
  if (!too_many.empty()) {
    run.launch.refuse(too_many);
    return 2;
  }
  if (!run.launch.same_data(data)) return 2;
  print_batches(run, data.train.size());

  TrainProgress progress(run);
  core::FitOptions fit = core::fit_options(run.o.settings);
  vgpu::WorkerGroup* group = run.launch.workers();
  // Each worker sees Ctrl-C or mpirun's SIGTERM at its own moment: every one stops after the
  // same step, the first any of them asks (vgpu::any_worker_asks).
  const auto stop_asked = [group] { return vgpu::any_worker_asks(group, interrupt_signal() != 0); };
  fit.stop_requested = stop_asked;
  core::FitLoop loop(*run.strategy, data.train, &data.test, fit, &progress);
  if (const std::optional<int> refused = before_first_step(run, loop, data.train)) return *refused;
  const std::int64_t steps_before = loop.history().steps;  // made by the run resumed
  run.steps_before = steps_before;
  run.gpu_work_before = vgpu::process_gpu_work_counts().snapshot();
  const RunEnd end = train_steps(run, loop, progress, stop_asked);
  if (end.left) return end.status;

  const std::vector<core::PhaseTotals> totals = run.events.phase_totals();
  print_results(run, loop, totals, loop.history().steps - steps_before);
  write_run_files(run, loop, end, totals, data.train.size());
  std::fflush(stdout);
  if (run.checkpoints_not_saved > 0) {  // said as each failed: at the end, how many (scrolled away)
    std::fprintf(stderr, "mirrorlab train: error: %s not saved (said above)\n",
                 core::counted(run.checkpoints_not_saved, "checkpoint").c_str());
  }
  for (const std::string& e : run.write_errors) {
    std::fprintf(stderr, "mirrorlab train: error: %s\n", e.c_str());
  }
  run.launch.finish();
  const bool lost = run.checkpoints_not_saved > 0 || !run.write_errors.empty();
  return end.status == 0 && lost ? 1 : end.status;  // main() checks stdout
}

}  // namespace mirrorlab::app
