#include "app/compare_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "app/compare_tables.h"
#include "app/flags.h"
#include "app/interrupt.h"
#include "app/output_files.h"
#include "timing/fit.h"
#include "timing/topology_file.h"
#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/device.h"
#include "virtualgpu/device_registry.h"
#include "virtualgpu/memory/memory_arena.h"
#include "virtualgpu/topology_fit.h"

namespace mirrorlab::app {
namespace {

constexpr const char* kCommand = "mirrorlab compare";

// The sizes of the fit's all-reduces: small enough that the latencies are most of their time,
// and none of the sizes the model is then checked at.
constexpr std::size_t kLatencyMinBytes = 4 << 10, kLatencyMaxBytes = 64 << 10;

// Every size is timed for at least this long in each round (more iterations than -n where it is
// quick), so that a moment this machine gives to something else is a small part of its time.
constexpr double kMinSecondsPerSize = 0.02;

// Enough devices to show where the step latency and the shared memory start to cost.
constexpr int kDefaultDevices = 4;

bool stop_requested() { return interrupt_signal() != 0; }

void say(const std::string& line) {
  std::printf("# measuring %s ...\n", line.c_str());
  std::fflush(stdout);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "an unknown CPU";
}

std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char text[16];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

// The counts the model is checked on: 2, 4, 8, ... up to the devices there are, and that number.
std::vector<int> device_counts(int devices) {
  std::vector<int> counts;
  for (int n = 2; n < devices; n *= 2) counts.push_back(n);
  if (devices >= 2) counts.push_back(devices);
  return counts;
}

std::vector<std::string> modelled_algorithms() {
  std::vector<std::string> names;
  for (const vgpu::AllReduceAlgorithm& row : vgpu::all_reduce_algorithms()) {
    if (row.schedule != nullptr) names.emplace_back(row.name);
  }
  return names;
}

// The fit's measurements and its check's: the memory, the small all-reduces and the sizes the
// model is checked at, round by round (vgpu::FitPlan says why).
vgpu::FitPlan fit_plan(const std::vector<vgpu::Device*>& devices, const CompareOptions& o,
                       const vgpu::AllReduceBenchOptions& check_sweep) {
  vgpu::FitPlan plan;
  // Working sets from 1 MiB (smaller ones are all latency, and too short to time alone) to what
  // the largest all-reduce holds on every device.
  const std::size_t largest = o.sweep.max_bytes * devices.size();
  for (std::size_t bytes = 1 << 20; bytes < largest; bytes *= 2) plan.working_sets.push_back(bytes);
  plan.working_sets.push_back(largest);
  plan.one_device_bytes = 2 * o.sweep.max_bytes;
  plan.algorithms = modelled_algorithms();
  plan.device_counts = device_counts(static_cast<int>(devices.size()));
  plan.latency_sweep = {kLatencyMinBytes, kLatencyMaxBytes, 2.0, 50, 10};
  plan.latency_sweep.min_seconds = kMinSecondsPerSize;
  plan.check_sweep = check_sweep;
  plan.rounds = o.rounds;
  return plan;
}

// Fits the model to what was measured, and writes the topology to `path`.
timing::Topology fit_here(const std::vector<vgpu::Device*>& devices,
                          const vgpu::FitMeasurements& measured, const std::string& path,
                          OutputFiles& files) {
  const std::string cpu = cpu_model();
  const int engines = vgpu::engine_count(devices);
  timing::Topology t = timing::shared_memory_topology(measured.memory, engines);
  t.id = timing::kFittedTopologyId;
  t.gpus_per_node = static_cast<int>(devices.size());
  const timing::Latencies latencies = timing::fit_latencies(t, measured.latency);
  t.call_latency = latencies.call;
  t.step_latency = latencies.step;
  t.move_latency = latencies.move;
  t.title = std::to_string(devices.size()) +
            (devices.front()->is_cuda() ? " logical GPUs of one card" : " CPU virtual GPUs") +
            " on this machine (fitted)";
  t.source =
      "Measured by 'mirrorlab compare --fit' on " + today() + ", " + cpu + " (" +
      std::to_string(engines) +
      " cores): the memory's copy (b = a) and add (b += a) bandwidth at each size, one "
      "device alone and all at once, reading its own writes and another device's (STREAM-style, "
      "the best of several runs); the call, step and move latencies fitted to all-reduces of 4 to "
      "64 KiB.";
  print_fit(t, measured.memory);
  const std::string problem = write_output(files, "--output", timing::write_topology(t));
  if (!problem.empty()) throw std::runtime_error(problem);
  std::printf("# Saved to %s: 'mirrorlab compare' checks it, '--topology %s' predicts with it\n",
              path.c_str(), timing::kFittedTopologyId);
  return t;
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

int bad_input(const std::string& problem) {
  std::fprintf(stderr, "%s: %s\nRun '%s --help' for the flags.\n", kCommand, problem.c_str(),
               kCommand);
  return 2;
}

// One replica's compute timed on `device` for the training step's table: -1 when done, else the
// exit status (interrupted, or the model and batch do not fit the device).
int measure_step_compute(const StepPlan& step, vgpu::Device& device, ReplicaComputeTime* out) {
  try {
    if (measure_compute(step, device, stop_requested, out)) return -1;
  } catch (const vgpu::OutOfMemoryError& e) {
    std::fflush(stdout);
    return bad_input(compute_out_of_memory(step, e.what()));
  }
  std::printf(
      "# Interrupted by %s while measuring one replica's compute: nothing more was "
      "measured\n",
      interrupt_name(interrupt_signal()));
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
      "or the model's FLOPs over the preset's FLOP/s) plus the predicted all-reduce, the "
      "speed-up, and the device after which another one stops paying for itself");
  add_device_flags(cmd, o.devices, kDefaultDevices);
  cmd->add_flag("--fit", o.fit,
                "Measure this machine's memory and all-reduces first, fit the model, and save it");
  add_text_flag(cmd, "--output", o.output,
                "With --fit: the topology file to write (default: " +
                    timing::fitted_topology_file().string() + ")");
  add_text_flag(cmd, "--topology", o.topology,
                "Predict on this preset or topology file, measuring no all-reduce (e.g. "
                "dgx-h100, pcie-2, this-machine); the training step's compute is measured only "
                "where the topology gives no FLOP/s, or with --compute measured");
  add_text_flag(cmd, "--fitted", o.fitted,
                "The fitted topology file to check against measurement (default: this "
                "machine's)");
  add_sweep_flags(cmd, o.sweep, "1M", "256M");
  add_whole_number_flag(cmd, "--rounds", o.rounds, 1, 100,
                        "Measure every algorithm (with --fit, the memory too) this many times, "
                        "interleaved; each size keeps "
                        "its best (each round times a size -n times, and for at least 20 ms)");
  add_step_flags(cmd, o.step);
  return cmd;
}

int run_compare(const CompareOptions& o) {
  if (!o.topology.empty()) {
    if (o.fit) return bad_input("--topology predicts without measuring; --fit measures: give one");
    // Nothing is held on a device: only the sizes are checked.
    if (std::string p = sweep_problem(o.sweep, o.devices, 1, 0); !p.empty()) return bad_input(p);
    timing::Topology t;
    try {
      t = timing::find_topology(o.topology);
    } catch (const timing::NotFittedError& e) {
      return bad_input(std::string(e.what()) + ": run '" + kCommand + " --fit' first");
    } catch (const std::exception& e) {
      return bad_input(e.what());
    }
    StepPlan step;
    if (std::string p = plan_step(o.step, &t, t.ranks(), &step); !p.empty()) return bad_input(p);
    print_preset_prediction(t, vgpu::sweep_sizes(o.sweep.options()));
    ReplicaComputeTime compute;
    if (step.measure) {
      vgpu::DeviceRegistry registry;
      const std::vector<vgpu::Device*>& one = make_devices(plan_devices(o.devices, 1), registry);
      if (int status = measure_step_compute(step, *one.front(), &compute); status >= 0) {
        return status;
      }
    } else {
      compute = flops_compute(step, t);
    }
    print_step_table(step, t, compute);
    return 0;
  }
  DeviceFlags device_flags = o.devices;
  if (device_flags.gpus == 0 && device_flags.memory_limits_mib.size() <= 1 &&
      device_flags.physical_gpus.empty()) {
    device_flags.gpus = kDefaultDevices;
  }
  if (o.fit && device_flags.physical_gpus.size() > 1) {
    return bad_input(
        "--fit on GPUs of their own (--devices with more than one card) is not built yet: the fit "
        "models devices that share one memory (CPU virtual GPUs, logical GPUs of one card), and "
        "separate GPUs are joined by links (NVLink, PCIe) it does not measure. Predict them with "
        "--topology (pcie-2, nvlink-pairs-4, dgx-h100, or a topology file of your own), or fit "
        "logical GPUs of one card (--devices with one card)");
  }
  std::string problem;
  const int gpus = device_count(device_flags, &problem);
  if (problem.empty() && gpus < 2) problem = "--gpus " + std::to_string(gpus) +
                                             ": an all-reduce needs at least 2 devices";
  // The fit's kernels hold two buffers of -e on each device.
  if (problem.empty()) problem = sweep_problem(o.sweep, device_flags, gpus, 2);
  if (problem.empty() && !o.fit && !o.output.empty()) problem = "--output needs --fit";
  StepPlan step;
  if (problem.empty()) problem = plan_step(o.step, nullptr, gpus, &step);
  if (!problem.empty()) return bad_input(problem);
  const std::string save_to =
      !o.output.empty() ? o.output : timing::fitted_topology_file().string();
  if (o.fit && save_to.empty()) {
    return bad_input("neither HOME nor XDG_CONFIG_HOME is set: give --output FILE");
  }
  OutputFiles files;
  if (o.fit) {
    std::error_code ignored;  // a missing ~/.config/mirrorlab is made; OutputFiles says the rest
    std::filesystem::create_directories(std::filesystem::path(save_to).parent_path(), ignored);
    if (std::string p = files.add("--output", save_to); !p.empty()) return bad_input(p);
  }
  // Without --fit, the fitted file must be there before anything is measured.
  timing::Topology model;
  if (!o.fit) {
    try {
      model = timing::find_topology(o.fitted.empty() ? timing::kFittedTopologyId : o.fitted);
    } catch (const timing::NotFittedError& e) {
      return bad_input(std::string(e.what()) + ": run '" + kCommand +
                       " --fit' first (about 2 minutes), or give --fitted FILE");
    } catch (const std::exception& e) {
      return bad_input(e.what());
    }
    if (model.ranks() < gpus) {
      return bad_input(model.id + " (" + model.path + ") has " + std::to_string(model.ranks()) +
                       " GPUs, fewer than --gpus " + std::to_string(gpus) +
                       ": fit it again with 'mirrorlab compare --fit --gpus " +
                       std::to_string(gpus) + "', or lower --gpus");
    }
  }

  vgpu::DeviceRegistry registry;
  registry.set_bind_threads_to_cpus(true);  // a measurement: every device on a core of its own
  const std::vector<vgpu::Device*>& devices = make_devices(plan_devices(device_flags, gpus), registry);
  // The training step's compute first: a few seconds, and a batch that does not fit is said
  // before the long measurements.
  ReplicaComputeTime compute;
  if (int status = measure_step_compute(step, *devices.front(), &compute); status >= 0) {
    return status;
  }
  vgpu::AllReduceBenchOptions sweep = o.sweep.options();
  sweep.min_seconds = kMinSecondsPerSize;
  std::vector<timing::AllReduceSample> measured;
  timing::MemorySample before, after;  // the memory around a check of a saved fit
  if (o.fit) {
    std::printf("# Fitting the timing model to %zu %s (%s)\n", devices.size(),
                devices.front()->is_cuda() ? "CUDA devices" : "CPU virtual GPUs",
                cpu_model().c_str());
    vgpu::FitMeasurements fit =
        vgpu::measure_for_fit(devices, fit_plan(devices, o, sweep), say, stop_requested);
    if (stop_requested()) {
      std::printf("# Interrupted by %s before the fit was complete: nothing was saved\n",
                  interrupt_name(interrupt_signal()));
      return interrupt_exit_status(interrupt_signal());
    }
    model = fit_here(devices, fit, save_to, files);
    measured = std::move(fit.check);
  } else {
    before = memory_now(devices, o, "before");
    measured = vgpu::measure_all_reduce_samples(devices, modelled_algorithms(), device_counts(gpus),
                                                sweep, o.rounds, say, stop_requested);
    after = memory_now(devices, o, "after");
  }
  print_check(model, timing::predict(model, measured));
  if (!o.fit && after.bytes > 0) print_memory_drift(model, before, after);
  if (const int signal = interrupt_signal(); signal != 0) {
    std::printf("# Interrupted by %s: the rows above are complete, the rest was not measured\n",
                interrupt_name(signal));
    return interrupt_exit_status(signal);
  }
  print_step_table(step, model, compute);
  return 0;
}

}  // namespace mirrorlab::app
