#include "app/compare_step.h"

#include <algorithm>
#include <cstdio>

#include "app/compare_tables.h"
#include "app/flags.h"
#include "app/model_summary.h"
#include "core/nn/kernels_cpu.h"
#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/all_reduce_choice.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::app {
namespace {

// "4.9 us", "12.30 ms", "1.25 s"
std::string time_text(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  }
  return text;
}

// "331 MFLOP", "4.7 GFLOP"
std::string flop_text(double flops) {
  const char* units[] = {"", "k", "M", "G", "T", "P"};
  int unit = 0;
  while (flops >= 1000 && unit < 5) {
    flops /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, flops < 10 ? "%.2f %sFLOP" : "%.0f %sFLOP", flops, units[unit]);
  return text;
}

// "1st", "2nd", "3rd", "4th", ..., "11th", "12th", "13th", "21st"
std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

// A paragraph of the table's heading, wrapped.
void say(const std::string& text) { print_wrapped(text, "# ", 98); }

std::string device_words(int n) { return std::to_string(n) + (n == 1 ? " device" : " devices"); }

// What computes at once on the topology, for the line above the table.
std::string engines_text(const timing::Topology& t, int engines) {
  if (engines == 0) return "Every GPU computes its own replica, all at the same time.";
  if (t.memory.engines > 0) {
    return std::to_string(engines) + " engine" + (engines == 1 ? "" : "s") +
           " (the topology's: CPU cores) compute at once; replicas beyond them take turns "
           "('in turn': replicas one engine computes one after another).";
  }
  return "Its logical GPUs share one card: their replicas take turns on it ('in turn').";
}

// Where another device stops paying for itself, and why.
void print_verdict(const std::vector<timing::StepTime>& rows) {
  const timing::StopPoint stop = timing::where_adding_stops(rows);
  char rule[160];
  std::snprintf(rule, sizeof rule,
                "Another device pays for itself while it adds at least %.0f%% of one device's "
                "images/s (added >= %+.2f). ",
                100 * timing::kPaysForItself, timing::kPaysForItself);
  if (!stop.stopped) {
    char verdict[200];
    std::snprintf(verdict, sizeof verdict,
                  "Here every device up to %s pays for itself: they give %.2fx the images/s of "
                  "one (the topology has no more).",
                  device_words(stop.devices).c_str(), rows.back().speedup);
    say(rule + std::string(verdict));
    return;
  }
  // where_adding_stops names counts of `rows`.
  const auto row = [&](int devices) {
    return *std::find_if(rows.begin(), rows.end(),
                         [&](const timing::StepTime& r) { return r.devices == devices; });
  };
  const timing::StepTime before = row(stop.devices), next = row(stop.next);
  const timing::StepTime best = *std::max_element(
      rows.begin(), rows.end(), [](const timing::StepTime& a, const timing::StepTime& b) {
        return a.images_per_second < b.images_per_second;
      });
  const std::string which = next.devices == before.devices + 1
                                ? "the " + ordinal(next.devices) + " adds"
                                : "devices " + std::to_string(before.devices + 1) + " to " +
                                      std::to_string(next.devices) + " add";
  char verdict[320];
  std::snprintf(verdict, sizeof verdict,
                "Here it stops paying after %s: %s %+.2f of a device ('!'%s). The most images/s: "
                "%s, %.2fx one device's.",
                device_words(stop.devices).c_str(), which.c_str(), next.added,
                next.devices == before.devices + 1 ? "" : " each",
                device_words(best.devices).c_str(), best.speedup);
  say(rule + std::string(verdict));
  say(next.replicas_per_engine > before.replicas_per_engine
          ? "Why: the engines are all busy, so another replica waits its turn and its examples "
            "cost as long as the ones before."
          : "Why: the all-reduce (" + time_text(next.all_reduce) + " on " +
                device_words(next.devices) + ") grows beside a compute that does not shrink (" +
                time_text(next.compute) +
                "); a larger --batch-per-replica gives each device more work for the same "
                "all-reduce.");
}

}  // namespace

void add_step_flags(CLI::App* cmd, StepFlags& f) {
  add_model_flag(cmd, f.model);
  add_batch_per_replica_flag(cmd, f.batch_per_replica);
  add_optimizer_flag(cmd, f.optimizer);
  add_allreduce_flag(cmd, f.allreduce);
  add_choice_flag(cmd, "--compute", f.compute, {kComputeAuto, kComputeMeasured, kComputeFlops},
                  "Where one replica's compute (forward, backward, update) in the training "
                  "step's table comes from: measured (timed here on one device), flops (the "
                  "model's FLOPs / the topology's FLOP/s) or auto (flops on a --topology that "
                  "gives its FLOP/s, else measured)");
  add_whole_number_flag(cmd, "--compute-steps", f.compute_steps, 3, 1000,
                        "Training steps to time one replica's compute over, when it is measured "
                        "(the median counts; stops early after 15 s)");
}

std::string plan_step(const StepFlags& f, const timing::Topology* t, int max_devices,
                      StepPlan* plan) {
  StepPlan p;
  p.strategy.model = core::parse_model_kind(f.model);
  p.strategy.optimizer.kind = core::parse_optimizer_kind(f.optimizer);
  p.batch_per_replica = static_cast<std::size_t>(f.batch_per_replica);
  p.flops = core::training_flops(p.strategy.model, p.strategy.optimizer);
  p.compute_steps = f.compute_steps;
  p.max_devices = max_devices;

  const bool has_nccl = t != nullptr && t->has_nccl;
  const std::string where = t != nullptr ? t->id : "the devices at hand";
  p.algorithm_was_auto = f.allreduce == vgpu::kAutoAllReduce;
  // TensorFlow 2.21's choice (virtualgpu/all_reduce_choice.h): NCCL where every replica has a
  // GPU of its own, which is where a topology models NCCL; the ring elsewhere.
  p.algorithm = p.algorithm_was_auto ? std::string(has_nccl ? vgpu::kNcclName : vgpu::kRingName)
                                     : f.allreduce;
  const vgpu::AllReduceAlgorithm* row = vgpu::find_all_reduce(p.algorithm);
  if (row == nullptr) return "--allreduce: no algorithm " + p.algorithm;  // flags check it
  p.schedule = row->schedule;
  if (p.schedule == nullptr && !has_nccl) {
    return "--allreduce " + p.algorithm + ": NCCL cannot run on " + where +
           " (it needs one GPU per rank): choose " +
           vgpu::all_reduce_name_list("or", vgpu::kNcclName) +
           (t == nullptr ? ", or a --topology where NCCL runs (dgx-h100, pcie-2, ...)" : "");
  }

  const bool has_flops = t != nullptr && t->flops > 0;
  if (f.compute == kComputeFlops && !has_flops) {
    return t == nullptr
               ? std::string(
                     "--compute flops: on the devices at hand the compute is measured; "
                     "give --topology ID to scale it to a preset's FLOP/s")
               : "--compute flops: " + t->id + " gives no FLOP/s (flops_tflops in its file" +
                     (t->path.empty() ? std::string() : " " + t->path) +
                     "): give --compute measured, or a topology with a FLOP/s";
  }
  p.measure = f.compute == kComputeMeasured || (f.compute == kComputeAuto && !has_flops);
  *plan = p;
  return "";
}

bool measure_compute(const StepPlan& plan, vgpu::Device& device, const std::function<bool()>& stop,
                     ReplicaComputeTime* out) {
  const std::string what = std::string(core::to_string(plan.strategy.model)) + ", " +
                           std::to_string(plan.batch_per_replica) + " examples, " +
                           core::to_string(plan.strategy.optimizer.kind);
  std::printf("# measuring one replica's forward, backward and update (%s) on %s, %d steps ...\n",
              what.c_str(), device.name().c_str(), plan.compute_steps);
  std::fflush(stdout);
  core::set_blas_single_threaded();  // one BLAS thread per device thread, as in training
  core::ReplicaComputeOptions options;
  options.batch_per_replica = plan.batch_per_replica;
  options.steps = plan.compute_steps;
  auto said = vgpu::Clock::now();
  const core::ReplicaCompute c = core::measure_replica_compute(
      device, plan.strategy, options,
      [&](int done, int planned) {
        // A line every few seconds on long steps (a large batch), none on short ones.
        if (done < planned && vgpu::seconds_between(said, vgpu::Clock::now()) > 3) {
          std::printf("# measuring ... step %d of %d\n", done, planned);
          std::fflush(stdout);
          said = vgpu::Clock::now();
        }
      },
      stop);
  if (c.stopped || c.steps == 0) return false;
  char text[256];
  std::snprintf(text, sizeof text,
                "measured here on %s (%s): the median of %d steps, %s (forward %s, backward %s, "
                "update %s)",
                device.name().c_str(), vgpu::to_string(device.kind()), c.steps,
                time_text(c.seconds).c_str(), time_text(c.forward).c_str(),
                time_text(c.backward).c_str(), time_text(c.update).c_str());
  *out = {c.seconds, text};
  return true;
}

ReplicaComputeTime flops_compute(const StepPlan& plan, const timing::Topology& t) {
  const double flops = plan.flops.per_step(plan.batch_per_replica);
  const double seconds = timing::compute_seconds(flops, t);
  char text[320];
  std::snprintf(text, sizeof text,
                "scaled to %s's FLOP/s: %s per example (forward %s + backward %s) x %zu, + %s "
                "of update = %s per replica step / %.4g TFLOP/s = %s. A peak FLOP/s: real "
                "kernels on small matrices reach a fraction of it, so this is a lower bound",
                t.id.c_str(), flop_text(plan.flops.forward + plan.flops.backward).c_str(),
                flop_text(plan.flops.forward).c_str(), flop_text(plan.flops.backward).c_str(),
                plan.batch_per_replica, flop_text(plan.flops.update).c_str(),
                flop_text(flops).c_str(), t.flops / 1e12, time_text(seconds).c_str());
  return {seconds, text};
}

void print_step_table(const StepPlan& plan, const timing::Topology& t,
                      const ReplicaComputeTime& compute) {
  const double gradient_bytes = static_cast<double>(plan.flops.params) * sizeof(float);
  const int engines = timing::compute_engines(t);
  const std::vector<timing::StepTime> rows = timing::predict_steps(
      t, plan.schedule, gradient_bytes,
      {compute.seconds, engines, static_cast<double>(plan.batch_per_replica)}, plan.max_devices);

  const bool nccl = plan.schedule == nullptr;
  std::printf("#\n");
  say("One training step of the " + std::string(core::to_string(plan.strategy.model)) + " (" +
      with_commas(plan.flops.params) +
      " parameters: " + with_commas(static_cast<std::size_t>(gradient_bytes)) +
      " bytes of gradients to all-reduce each step) at " + std::to_string(plan.batch_per_replica) +
      " examples per replica with " + core::to_string(plan.strategy.optimizer.kind) + ", on 1 to " +
      std::to_string(plan.max_devices) + " GPUs of " + t.id + ": " + t.title + ".");
  say("Compute of one replica: " + compute.source + ".");
  say("All-reduce: " + plan.algorithm +
      (plan.algorithm_was_auto ? (nccl ? " (auto: TensorFlow 2.21's choice with a GPU per replica)"
                                       : " (auto: TensorFlow 2.21's choice where NCCL cannot run)")
                               : "") +
      (nccl ? ", its time from NCCL's own tuning model, which picks its algorithm and protocol."
            : ", its time predicted by the timing model, step by step."));
  say(engines_text(t, engines));
  say("step = compute x 'in turn' + all-reduce; images/s = devices x " +
      std::to_string(plan.batch_per_replica) +
      " / step (the global batch grows with the devices); speed-up: images/s over one "
      "device's; added: the images/s the last device brought, in one device's images/s.");
  std::printf("%8s %8s %12s %12s %12s %14s %9s %7s  %s\n", "devices", "in turn", "compute",
              "all-reduce", "step", "images/s", "speed-up", "added",
              nccl ? "NCCL picks" : "all-reduce's slowest step: busiest resource");
  const timing::StopPoint stop = timing::where_adding_stops(rows);
  for (const timing::StepTime& r : rows) {
    const bool past = stop.stopped && r.devices == stop.next;
    std::printf("%8d %8d %12s %12s %12s %14.0f %8.2fx %+7.2f%s %s\n", r.devices,
                r.replicas_per_engine, time_text(r.compute).c_str(),
                time_text(r.all_reduce).c_str(), time_text(r.seconds).c_str(), r.images_per_second,
                r.speedup, r.added, past ? "!" : " ",
                r.all_reduce_how.empty() ? "-" : r.all_reduce_how.c_str());
  }
  print_verdict(rows);
  say("Left out: replicas computing at once slowing each other (shared memory bandwidth and "
      "caches), the batch's split and input pipeline (docs/timing-model.md, section 7).");
}

std::string compute_out_of_memory(const StepPlan& plan, const std::string& what) {
  return what + ": one replica's compute cannot be measured at --batch-per-replica " +
         std::to_string(plan.batch_per_replica) +
         ". Give a smaller --batch-per-replica or a higher --memory-limit" +
         (plan.strategy.model == core::ModelKind::kCnn ? ", or --model mlp" : "");
}

}  // namespace mirrorlab::app
