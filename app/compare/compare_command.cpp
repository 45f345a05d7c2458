#include "app/compare/compare_command.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "CLI/CLI.hpp"
#include "app/compare/compare_fit.h"
#include "app/compare/compare_tables.h"
#include "app/flags/flags.h"
#include "app/output/interrupt.h"
#include "app/output/output_files.h"
#include "timing/fit.h"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/measure/topology_fit.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {
namespace {

constexpr const char* kCommand = "mirrorlab compare";

// Every size is timed for at least this long in each round (more iterations than -n where it is
// quick), so that a moment this machine gives to something else is a small part of its time.
constexpr double kMinSecondsPerSize = 0.02;

// Enough devices to show where the step latency and the shared memory start to cost.
constexpr int kDefaultDevices = 4;

bool stop_requested() { return interrupt_signal() != 0; }

void say(const std::string& line) {
  print_comment("measuring " + line + " ...", "# ");
  std::fflush(stdout);
}

// The memory over the check's largest working set (every device's largest buffer), measured
// now (the best of 2 rounds, a few seconds), to compare with the fit's curves there: `when` the
// check.
timing::MemorySample memory_now(const std::vector<vgpu::Device*>& devices, const CompareOptions& o,
                                const std::string& when) {
  const std::size_t bytes = o.sweep.max_bytes * devices.size();
  say("the memory over " + vgpu::size_label(static_cast<double>(bytes)) + " " + when +
      " the check, to compare with the fit");
  const std::vector<timing::MemorySample> now = vgpu::measure_memory_samples(
      devices, {bytes}, 2 * o.sweep.max_bytes, 3, 2, {}, stop_requested);
  return now.empty() || stop_requested() ? timing::MemorySample{} : now.front();
}

// One replica's compute timed on `device` for the training step's table: -1 when done, else the
// exit status (interrupted, or the model and batch do not fit the device).
int measure_step_compute(const StepPlan& step, vgpu::Device& device, ReplicaComputeTime* out) {
  try {
    if (measure_compute(step, device, stop_requested, out)) return -1;
  } catch (const vgpu::OutOfMemoryError& e) {
    std::fflush(stdout);
    return compare_bad_input(compute_out_of_memory(step, e.what()));
  }
  print_comment(formatted("Interrupted by %s while measuring one replica's compute: nothing more "
                          "was measured",
                          interrupt_name(interrupt_signal())),
                "# ");
  return interrupt_exit_status(interrupt_signal());
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "The timing model of the all-reduce against measurement: --fit measures this machine and "
      "saves its parameters; then each algorithm and size is measured here beside what the model "
      "predicts. --topology ID predicts every algorithm (NCCL's too) on a preset machine. Both "
      "end with one training step of --model at --batch-per-replica on 1 to N devices (N: "
      "--gpus here, the topology's GPUs with --topology): one replica's compute (measured here, "
      "or its kernels priced on the preset's GPU) plus the predicted all-reduce, the "
      "speed-up, and the device after which another one stops paying for itself");
  add_device_flags(cmd, o.devices, kDefaultDevices);
  cmd->add_flag("--fit", o.fit,
                "Measure this machine's memory and all-reduces first, fit the model, and save it");
  add_text_flag(cmd, "--output", o.output,
                "With --fit: the topology file to write (default: " +
                    timing::fitted_topology_file().string() +
                    "); with --replay: where to save the fit again (default: not saved)")
      ->type_name("FILE");
  add_text_flag(cmd, "--topology", o.topology,
                "Predict on this preset or topology file, measuring no all-reduce (e.g. "
                "dgx-h100, pcie-2, this-machine); the training step's compute is measured only "
                "where the topology gives no [compute] or FLOP/s, or with --compute measured")
      ->type_name("ID|FILE");
  add_text_flag(cmd, "--record", o.record,
                "Also save everything measured to this file (JSON): the memory and the "
                "all-reduces of a fit, or those of a check, for --replay")
      ->type_name("FILE");
  add_text_flag(cmd, "--replay", o.replay,
                "Measure nothing: fit the model again to what a --record file of a fit holds "
                "(saved only with --output), or check the fitted model (--fitted) against a "
                "check's")
      ->type_name("FILE");
  add_text_flag(cmd, "--fitted", o.fitted,
                "The fitted topology file to check against measurement (default: this "
                "machine's)")
      ->type_name("FILE");
  add_sweep_flags(cmd, o.sweep, "1M", "256M");
  add_whole_number_flag(cmd, "--rounds", o.rounds, 1, 100,
                        "Measure every algorithm (with --fit, the memory too) this many times, "
                        "interleaved; each size keeps "
                        "its best (each round times a size -n times, and for at least 20 ms)");
  add_step_flags(cmd, o.step);
  return cmd;
}

namespace {

// --topology: the preset's (or the file's) prediction, nothing measured but, where the step
// asks for it, one device's compute.
int predict_on_topology(const CompareOptions& o) {
  if (o.fit) {
    return compare_bad_input("--topology predicts without measuring; --fit measures: give one");
  }
  // What only a measurement here uses would be ignored: refused, saying why.
  if (!o.fitted.empty()) {
    return compare_bad_input("--fitted is the fit of this machine, which --topology " + o.topology +
                             " does not use: give one");
  }
  if (!o.output.empty()) return compare_bad_input("--output needs --fit; --topology saves nothing");
  if (!o.record.empty()) {
    return compare_bad_input("--record keeps what is measured here, and --topology " + o.topology +
                             " measures no all-reduce: leave --record out");
  }
  if (o.devices.gpus != 0) {
    return compare_bad_input("--gpus " + std::to_string(o.devices.gpus) + ": --topology " +
                             o.topology + " predicts on its own GPUs; leave --gpus out");
  }
  // Nothing is held on a device: only the sizes are checked.
  if (std::string p = sweep_problem(o.sweep, o.devices, 1, 0); !p.empty()) {
    return compare_bad_input(p);
  }
  timing::Topology t;
  try {
    t = timing::find_topology(o.topology);
  } catch (const timing::NotFittedError& e) {
    return compare_bad_input(std::string(e.what()) + ": run '" + kCommand + " --fit' first");
  } catch (const std::exception& e) {
    return compare_bad_input(e.what());
  }
  StepPlan step;
  if (std::string p = plan_step(o.step, &t, t.ranks(), &step); !p.empty()) {
    return compare_bad_input(p);
  }
  print_preset_prediction(t, vgpu::sweep_sizes(o.sweep.options()));
  ReplicaComputeTime compute;
  if (step.measure) {
    vgpu::DeviceRegistry registry;
    const std::vector<vgpu::Device*>& one = make_devices(plan_devices(o.devices, 1), registry);
    if (int status = measure_step_compute(step, *one.front(), &compute); status >= 0) {
      return status;
    }
  } else {
    compute = modelled_compute(step, t);
  }
  print_step_table(step, t, compute);
  return 0;
}

// A comparison that measures here (--fit, or the check against the saved fit), as its flags
// set it up.
struct Measurement {
  DeviceFlags devices;
  int gpus = 0;
  StepPlan step;
  std::string save_to;     // --fit: where the fitted topology goes
  OutputFiles files;       // --output, --record
  timing::Topology model;  // without --fit: the saved fit, read before anything is measured
};

// "" when the flags make a measurement (into *m), else what is wrong.
std::string prepare_measurement(const CompareOptions& o, Measurement* m) {
  m->devices = o.devices;
  if (m->devices.gpus == 0 && m->devices.memory_limits_mib.size() <= 1 &&
      m->devices.physical_gpus.empty()) {
    m->devices.gpus = kDefaultDevices;
  }
  if (o.fit && m->devices.physical_gpus.size() > 1) {
    return "--fit on GPUs of their own (--devices with more than one card) is not built yet: the "
           "fit models devices that share one memory (CPU virtual GPUs, logical GPUs of one "
           "card), and separate GPUs are joined by links (NVLink, PCIe) it does not measure. "
           "Predict them with --topology (pcie-2, nvlink-pairs-4, dgx-h100, or a topology file of "
           "your own), or fit logical GPUs of one card (--devices with one card)";
  }
  std::string problem;
  m->gpus = all_reduce_device_count(m->devices, &problem);
  // The fit's kernels hold two buffers of -e on each device.
  if (problem.empty()) problem = sweep_problem(o.sweep, m->devices, m->gpus, 2);
  if (problem.empty() && !o.fit && !o.output.empty()) {
    problem = "--output needs --fit (or --replay of a fit's recording)";
  }
  if (problem.empty()) problem = plan_step(o.step, nullptr, m->gpus, &m->step);
  if (!problem.empty()) return problem;
  m->save_to = !o.output.empty() ? o.output : timing::fitted_topology_file().string();
  if (o.fit && m->save_to.empty()) {
    return "neither HOME nor XDG_CONFIG_HOME is set: give --output FILE";
  }
  m->files.add_input("--fitted", o.fitted);
  if (o.fit) {
    std::error_code ignored;  // a missing ~/.config/mirrorlab is made; OutputFiles says the rest
    std::filesystem::create_directories(std::filesystem::path(m->save_to).parent_path(), ignored);
    if (std::string p = m->files.add("--output", m->save_to); !p.empty()) return p;
  }
  if (std::string p = m->files.add("--record", o.record, true, OutputFiles::Writes::kRecording);
      !p.empty())
    return p;
  if (o.fit) return "";
  try {
    m->model = timing::find_topology(o.fitted.empty() ? timing::kFittedTopologyId : o.fitted);
  } catch (const timing::NotFittedError& e) {
    return std::string(e.what()) + ": run '" + kCommand +
           " --fit' first (about 5 minutes on 2 cores), or give --fitted FILE";
  } catch (const std::exception& e) {
    return e.what();
  }
  // A check measures devices of one memory here: a topology of GPUs joined by links (a preset)
  // is predicted, not checked against them.
  if (m->model.fabric != timing::Fabric::kSharedMemory) {
    return "--fitted " + o.fitted + " is " + m->model.id + ", a machine of separate GPUs (fabric " +
           timing::to_string(m->model.fabric) +
           "), not a fit of devices that share one memory as those measured here do: predict on "
           "it with --topology " +
           o.fitted + ", or give a file that 'mirrorlab compare --fit' wrote";
  }
  if (m->model.ranks() < m->gpus) {
    return m->model.id + " (" + m->model.path + ") has " + std::to_string(m->model.ranks()) +
           " GPUs, fewer than --gpus " + std::to_string(m->gpus) +
           ": fit it again with 'mirrorlab compare --fit --gpus " + std::to_string(m->gpus) +
           "', or lower --gpus";
  }
  return "";
}

// Measures on this machine's devices: the step's compute, then the fit (--fit) or the check
// against the saved fit; prints the check and the step's table.
int measure(const CompareOptions& o, Measurement& m) {
  vgpu::DeviceRegistry registry;
  registry.set_bind_threads_to_cpus(true);  // a measurement: every device on a core of its own
  const std::vector<vgpu::Device*>& devices =
      make_devices(plan_devices(m.devices, m.gpus), registry);
  // The training step's compute first: a few seconds, and a batch that does not fit is said
  // before the long measurements.
  ReplicaComputeTime compute;
  if (int status = measure_step_compute(m.step, *devices.front(), &compute); status >= 0) {
    return status;
  }
  vgpu::AllReduceBenchOptions sweep = o.sweep.options();
  sweep.min_seconds = kMinSecondsPerSize;
  vgpu::FitRecording recorded = recording_here(
      o.fit ? vgpu::FitRecording::Kind::kFit : vgpu::FitRecording::Kind::kCheck, devices);
  if (o.fit) {
    print_comment(
        formatted("Fitting the timing model to %zu %s (%s)", devices.size(),
                  recorded.cuda ? "CUDA devices" : "CPU virtual GPUs", recorded.machine.c_str()),
        "# ");
    recorded.measured =
        vgpu::measure_for_fit(devices, fit_plan(m.gpus, o, sweep), say, stop_requested);
    if (stop_requested()) {
      print_comment(formatted("Interrupted by %s before the fit was complete: nothing was fitted",
                              interrupt_name(interrupt_signal())),
                    "# ");
      // What was measured is kept where asked (a fit needs the memory at one size at least).
      recorded.interrupted = true;
      if (!recorded.measured.memory.empty()) save_recording(recorded, m.files, o.record);
      return interrupt_exit_status(interrupt_signal());
    }
    m.model = fit_recorded(recorded);
    save_fit(m.model, m.files, m.save_to);
  } else {
    recorded.memory_before = memory_now(devices, o, "before");
    recorded.measured.check = vgpu::measure_all_reduce_samples(
        devices, vgpu::modelled_all_reduce_names(), compared_device_counts(m.gpus), sweep, o.rounds,
        say, stop_requested);
    recorded.memory_after = memory_now(devices, o, "after");
  }
  const std::vector<timing::AllReduceSample>& measured = recorded.measured.check;
  recorded.interrupted = stop_requested();
  save_recording(recorded, m.files, o.record);
  print_check(m.model, timing::predict(m.model, measured));
  if (!o.fit && recorded.memory_after.bytes > 0) {
    print_memory_drift(m.model, recorded.memory_before, recorded.memory_after);
  }
  if (const int signal = interrupt_signal(); signal != 0) {
    print_comment(formatted("Interrupted by %s: the rows above are complete, the rest was not "
                            "measured",
                            interrupt_name(signal)),
                  "# ");
    return interrupt_exit_status(signal);
  }
  print_step_table(m.step, m.model, compute);
  return 0;
}

}  // namespace

int run_compare(const CompareOptions& o) {
  if (!o.replay.empty()) return replay_compare(o);
  if (!o.topology.empty()) return predict_on_topology(o);
  Measurement m;
  if (std::string p = prepare_measurement(o, &m); !p.empty()) return compare_bad_input(p);
  return measure(o, m);
}

}  // namespace mirrorlab::app
