#include "app/compare/compare_fit.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "app/compare/compare_tables.h"
#include "core/io/output_file.h"
#include "timing/fit.h"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::app {
namespace {

// The sizes of the fit's all-reduces: small enough that the latencies are most of their time,
// and none of the sizes the model is then checked at.
constexpr std::size_t kLatencyMinBytes = 4 << 10, kLatencyMaxBytes = 64 << 10;

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

}  // namespace

std::vector<int> compared_device_counts(int devices) {
  std::vector<int> counts;
  for (int n = 2; n < devices; n *= 2) counts.push_back(n);
  if (devices >= 2) counts.push_back(devices);
  return counts;
}

vgpu::FitPlan fit_plan(int devices, const CompareOptions& o,
                       const vgpu::AllReduceBenchOptions& check_sweep) {
  vgpu::FitPlan plan;
  // Working sets from 1 MiB (smaller ones are all latency, and too short to time alone) to what
  // the largest all-reduce holds on every device.
  const std::size_t largest = o.sweep.max_bytes * static_cast<std::size_t>(devices);
  for (std::size_t bytes = 1 << 20; bytes < largest; bytes *= 2) plan.working_sets.push_back(bytes);
  plan.working_sets.push_back(largest);
  plan.one_device_bytes = 2 * o.sweep.max_bytes;
  plan.algorithms = vgpu::modelled_all_reduce_names();
  plan.device_counts = compared_device_counts(devices);
  plan.latency_sweep = {kLatencyMinBytes, kLatencyMaxBytes, 2.0, 50, 10};
  plan.latency_sweep.min_seconds = check_sweep.min_seconds;
  plan.check_sweep = check_sweep;
  plan.rounds = o.rounds;
  return plan;
}

vgpu::FitRecording recording_here(vgpu::FitRecording::Kind kind,
                                  const std::vector<vgpu::Device*>& devices) {
  vgpu::FitRecording r;
  r.kind = kind;
  r.date = today();
  r.machine = cpu_model();
  r.devices = static_cast<int>(devices.size());
  r.cuda = devices.front()->is_cuda();
  r.engines = vgpu::engine_count(devices);
  return r;
}

timing::Topology fit_recorded(const vgpu::FitRecording& r, const std::string& replayed_from) {
  timing::Topology t = timing::shared_memory_topology(r.measured.memory, r.engines);
  t.id = timing::kFittedTopologyId;
  t.gpus_per_node = r.devices;
  const timing::Latencies latencies = timing::fit_latencies(t, r.measured.latency);
  t.call_latency = latencies.call;
  t.step_latency = latencies.step;
  t.move_latency = latencies.move;
  const std::string devices =
      std::to_string(r.devices) + (r.cuda ? " logical GPUs of one card" : " CPU virtual GPUs");
  t.title = devices + (replayed_from.empty() ? " on this machine (fitted)"
                                             : " (fitted again from a recording)");
  t.source = "Measured by 'mirrorlab compare --fit' on " + r.date + ", " + devices + ", " +
             r.machine + " (" + std::to_string(r.engines) +
             " cores): the memory's copy (b = a) and add (b += a) bandwidth at each size, one "
             "device alone and all at once, reading its own writes and another device's "
             "(STREAM-style, the best of several runs); the call, step and move latencies "
             "fitted to all-reduces of 4 to 64 KiB.";
  if (!replayed_from.empty()) {
    t.source += " Fitted again on " + today() + " from the recording " + replayed_from + ".";
  }
  print_fit(t, r.measured.memory);
  return t;
}

void save_fit(const timing::Topology& fitted, OutputFiles& files, const std::string& path) {
  const std::string problem = write_output(files, "--output", timing::write_topology(fitted));
  if (!problem.empty()) throw std::runtime_error(problem);
  // This machine's own file is what 'compare' checks and 'this-machine' names; another is named.
  const std::string own = timing::fitted_topology_file().string();
  if (!own.empty() && core::same_output_path(path, own)) {
    print_comment(formatted("Saved to %s: 'mirrorlab compare' checks it, '--topology %s' predicts "
                            "with it",
                            path.c_str(), timing::kFittedTopologyId),
                  "# ");
  } else {
    print_comment(formatted("Saved to %s: 'mirrorlab compare --fitted %s' checks it, '--topology "
                            "%s' predicts with it",
                            path.c_str(), path.c_str(), path.c_str()),
                  "# ");
  }
}

void save_recording(const vgpu::FitRecording& recording, OutputFiles& files,
                    const std::string& path) {
  if (files.find("--record") == nullptr) return;
  const std::string problem = write_output(files, "--record", vgpu::write_fit_recording(recording));
  if (!problem.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "mirrorlab compare: %s\n", problem.c_str());
    return;
  }
  if (recording.kind == vgpu::FitRecording::Kind::kFit && !vgpu::fittable(recording)) {
    print_comment(formatted("What was measured before the interrupt is recorded in %s, too little "
                            "to fit from (the small all-reduces come last)",
                            path.c_str()),
                  "# ");
    return;
  }
  print_comment(formatted("What was measured is recorded in %s: 'mirrorlab compare --replay %s' %s "
                          "again from it, measuring nothing",
                          path.c_str(), path.c_str(),
                          recording.kind == vgpu::FitRecording::Kind::kFit ? "fits" : "checks"),
                "# ");
}

int replay_compare(const CompareOptions& o) {
  if (o.fit || !o.topology.empty()) {
    return compare_bad_input("--replay measures nothing, " +
                             std::string(o.fit ? "--fit measures" : "--topology predicts") +
                             ": give one");
  }
  if (!o.record.empty()) return compare_bad_input("--record with --replay would measure nothing");
  vgpu::FitRecording r;
  try {
    r = vgpu::read_fit_recording(o.replay);
  } catch (const vgpu::RecordingError& e) {
    return compare_bad_input(std::string("--replay ") + e.what() +
                             (e.interrupted_too_soon
                                  ? ": 'mirrorlab compare --fit' measures them (all of it again)"
                                  : ": give a file that 'mirrorlab compare --record FILE' wrote"));
  }
  const bool fit = r.kind == vgpu::FitRecording::Kind::kFit;
  if (fit && !o.fitted.empty()) {
    return compare_bad_input("--fitted is the model a check's recording is put beside, and " +
                             o.replay + " recorded a fit, which is fitted again: give one");
  }
  if (!fit && !o.output.empty()) {
    return compare_bad_input("--output saves a fit, and " + o.replay + " recorded a check");
  }
  OutputFiles files;
  files.add_input("--replay", o.replay);
  files.add_input("--fitted", o.fitted);
  if (std::string p = files.add("--output", o.output); !p.empty()) return compare_bad_input(p);
  if (r.interrupted) {
    print_comment(o.replay +
                      " was interrupted: it holds what was measured before (fewer sizes, or "
                      "rounds)",
                  "# ");
  }
  timing::Topology model;
  if (fit) {
    print_comment(
        formatted("Fitting the timing model again to what %s recorded: a fit on %s, %d %s, "
                  "%s",
                  o.replay.c_str(), r.date.c_str(), r.devices,
                  r.cuda ? "CUDA devices" : "CPU virtual GPUs", r.machine.c_str()),
        "# ");
    try {
      model = fit_recorded(r, o.replay);
    } catch (const std::invalid_argument& e) {  // curves that cannot be fitted
      return compare_bad_input("--replay " + o.replay + ": " + e.what());
    }
    if (!o.output.empty()) save_fit(model, files, o.output);
  } else {
    try {
      model = timing::find_topology(o.fitted.empty() ? timing::kFittedTopologyId : o.fitted);
    } catch (const timing::NotFittedError& e) {
      return compare_bad_input(std::string(e.what()) + ": give the fit " + o.replay +
                               " checked with --fitted FILE");
    } catch (const std::exception& e) {
      return compare_bad_input(e.what());
    }
    // (A fit's recording is fitted to its own devices: they always fit.)
    for (const timing::AllReduceSample& s : r.measured.check) {
      if (s.schedule.ranks > model.ranks()) {
        return compare_bad_input(o.replay + " has all-reduces on " +
                                 std::to_string(s.schedule.ranks) + " devices, and " + model.id +
                                 " only " + std::to_string(model.ranks()) + " GPUs");
      }
    }
    print_comment(formatted("Checking %s against what %s recorded: a check on %s, %d %s, %s",
                            model.path.empty() ? model.id.c_str() : model.path.c_str(),
                            o.replay.c_str(), r.date.c_str(), r.devices,
                            r.cuda ? "CUDA devices" : "CPU virtual GPUs", r.machine.c_str()),
                  "# ");
  }
  print_check(model, timing::predict(model, r.measured.check));
  if (!fit) print_memory_drift(model, r.memory_before, r.memory_after);
  print_comment(
      "Replayed: nothing was measured, so there is no training step's table (run 'mirrorlab "
      "compare' without --replay for it)",
      "# ");
  return 0;
}

}  // namespace mirrorlab::app
