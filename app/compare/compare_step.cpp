#include "app/compare/compare_step.h"

#include <algorithm>
#include <cstdio>

#include "CLI/CLI.hpp"
#include "app/compare/compare_tables.h"
#include "app/flags/flags.h"
#include "core/nn/cpu/kernels_cpu.h"
#include "core/session/text/keras_summary.h"
#include "core/strategy/gradient_packs.h"
#include "core/strategy/step_kernels.h"
#include "timing/step_words.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::app {
namespace {

using timing::time_text;

// A time in a column of 8 ("183.9 ms", where time_text says "183.95 ms").
std::string cell_time(double seconds) {
  return seconds >= 0.1 && seconds < 1 ? formatted("%.1f ms", seconds * 1e3) : time_text(seconds);
}

// A paragraph of the table's heading, wrapped.
void say(const std::string& text) { print_comment(text, "# "); }

}  // namespace

void add_step_flags(CLI::App* cmd, StepFlags& f) {
  add_model_flag(cmd, f.settings);
  add_batch_per_replica_flag(cmd, f.settings);
  add_optimizer_flags(cmd, f.settings);
  add_allreduce_flag(cmd, f.settings);
  add_pack_flags(cmd, f.settings);
  add_choice_flag(cmd, "--compute", f.compute, {kComputeAuto, kComputeMeasured, kComputeFlops},
                  "Where one replica's compute (forward, backward, update) in the training "
                  "step's table comes from: measured (timed here on one device), flops (priced "
                  "by the timing model on the topology's GPU: each kernel's launch, FLOPs and "
                  "bytes and the host's cost from its [compute], else the FLOPs over its FLOP/s) "
                  "or auto (flops on a --topology that gives either, else measured)");
  add_whole_number_flag(cmd, "--compute-steps", f.compute_steps, 3, 1000,
                        "Training steps to time one replica's compute over, when it is measured "
                        "(the median counts; stops early after 15 s)");
}

std::string plan_step(const StepFlags& f, const timing::Topology* t, int max_devices,
                      StepPlan* plan) {
  StepPlan p;
  p.strategy = core::strategy_options(f.settings);
  p.batch_per_replica = f.settings.batch_per_replica;
  p.flops = core::training_flops(p.strategy.model, p.strategy.optimizer);
  p.compute_steps = f.compute_steps;
  p.max_devices = max_devices;

  const bool has_nccl = t != nullptr && t->has_nccl;
  const std::string where = t != nullptr ? t->id : "the devices at hand";
  p.algorithm_was_auto = f.settings.allreduce == vgpu::kAutoAllReduce;
  // TensorFlow 2.21's choice (virtualgpu/collectives/all_reduce_choice.h): NCCL where every replica
  // has a GPU of its own, which is where a topology models NCCL; the ring elsewhere.
  p.algorithm =
      p.algorithm_was_auto
          ? std::string(t != nullptr ? vgpu::modelled_tensorflow_choice(*t).name : vgpu::kRingName)
          : f.settings.allreduce;
  const vgpu::AllReduceAlgorithm* row = vgpu::find_all_reduce(p.algorithm);
  if (row == nullptr) return "--allreduce: no algorithm " + p.algorithm;  // flags check it
  p.schedule = row->schedule;
  if (p.schedule == nullptr && !has_nccl) {
    return "--allreduce " + p.algorithm + ": NCCL cannot run on " + where +
           " (it needs one GPU per rank): choose " +
           vgpu::all_reduce_name_list("or", vgpu::kNcclName) +
           (t == nullptr ? ", or a --topology where NCCL runs (dgx-h100, pcie-2, ...)" : "");
  }
  if (t != nullptr) {
    const std::string why = vgpu::cannot_run_on(*row, *t, max_devices);
    if (!why.empty()) {
      return "--allreduce " + p.algorithm + " " + why + ": choose " +
             vgpu::all_reduce_name_list("or", p.algorithm) + ", or another --topology";
    }
  }

  const bool has_flops = t != nullptr && (t->compute.given() || t->flops > 0);
  if (f.compute == kComputeFlops && !has_flops) {
    return t == nullptr
               ? std::string(
                     "--compute flops: on the devices at hand the compute is measured; "
                     "give --topology ID to price it on a preset's GPU")
               : "--compute flops: " + t->id +
                     " gives neither a [compute] table nor a FLOP/s (flops_tflops) in its file" +
                     (t->path.empty() ? std::string() : " " + t->path) +
                     ": give --compute measured, or a topology that gives one";
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
  print_comment(formatted("measuring one replica's forward, backward and update (%s) on %s, %d "
                          "steps ...",
                          what.c_str(), device.name().c_str(), plan.compute_steps),
                "# ");
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
  *out = {c.seconds,
          formatted("measured here on %s (%s): the median of %d steps, %s (forward %s, backward "
                    "%s, update %s)",
                    device.name().c_str(), vgpu::to_string(device.kind()), c.steps,
                    time_text(c.seconds).c_str(), time_text(c.forward).c_str(),
                    time_text(c.backward).c_str(), time_text(c.update).c_str())};
  return true;
}

ReplicaComputeTime modelled_compute(const StepPlan& plan, const timing::Topology& t) {
  const core::ModelledCompute c = core::modelled_compute(
      plan.strategy.model, plan.strategy.optimizer, plan.batch_per_replica, t);
  return {c.seconds, c.source, c.overlapped};
}

void print_step_table(const StepPlan& plan, const timing::Topology& t,
                      const ReplicaComputeTime& compute) {
  const double gradient_bytes = static_cast<double>(plan.flops.params) * sizeof(float);
  const int engines = timing::compute_engines(t);
  timing::StepInputs inputs;
  inputs.replica_compute = compute.seconds;
  inputs.engines = engines;
  inputs.batch_per_replica = static_cast<double>(plan.batch_per_replica);
  inputs.overlapped = compute.overlapped;
  const std::vector<timing::StepTime> one_buffer =
      timing::predict_steps(t, plan.schedule, gradient_bytes, inputs, plan.max_devices);
  // Backward's share of the compute, by its arithmetic (core/nn/training_flops.h).
  const std::vector<core::GradientPack> packs =
      core::set_step_packs(inputs, plan.strategy.model, plan.strategy.optimizer,
                           plan.batch_per_replica, plan.strategy.packs);
  const std::vector<timing::StepTime> rows =
      packs.size() > 1
          ? timing::predict_steps(t, plan.schedule, gradient_bytes, inputs, plan.max_devices)
          : one_buffer;

  const bool nccl = plan.schedule == nullptr;
  std::printf("#\n");
  say("One training step of the " + std::string(core::to_string(plan.strategy.model)) + " (" +
      core::with_commas(plan.flops.params) +
      " parameters: " + core::with_commas(static_cast<std::size_t>(gradient_bytes)) +
      " bytes of gradients to all-reduce each step) at " + std::to_string(plan.batch_per_replica) +
      " examples per replica with " + core::to_string(plan.strategy.optimizer.kind) + ", on 1 to " +
      std::to_string(plan.max_devices) + " GPUs of " + t.id + ": " + t.title + ".");
  say("Compute of one replica: " + compute.source + ".");
  say(timing::all_reduce_sentence(plan.algorithm, plan.algorithm_was_auto, nccl));
  say(timing::engines_sentence(t, engines));
  say(timing::step_formula_sentence(plan.batch_per_replica));
  if (packs.size() > 1) {
    say(core::packs_step_sentence(packs, plan.strategy.packs, t, time_text(inputs.backward),
                                  "--no-overlap"));
  }
  const bool packed = packs.size() > 1;
  const char* last_heading = packed ? "all-reduce in all | one buffer's step"
                             : nccl ? "NCCL picks"
                                    : "all-reduce's slowest step: busiest resource";
  const timing::StopPoint stop = timing::where_adding_stops(rows);
  std::vector<std::string> figures, lasts, keys;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const timing::StepTime& r = rows[i];
    const bool past = stop.stopped && r.devices == stop.next;
    // The '!' beside the first count whose device does not pay for itself.
    figures.push_back(formatted("%7d%s%7d %8s %10s %8s %8.0f %8s %+5.2f", r.devices,
                                past ? "!" : " ", r.replicas_per_engine,
                                cell_time(r.compute).c_str(), cell_time(r.all_reduce).c_str(),
                                cell_time(r.seconds).c_str(), r.images_per_second,
                                formatted("%.2fx", r.speedup).c_str(), r.added));
    lasts.push_back(packed
                        ? time_text(r.all_reduce_total) + " | " + time_text(one_buffer[i].seconds)
                        : (r.all_reduce_how.empty() ? "-" : r.all_reduce_how));
    keys.push_back(std::to_string(r.devices));
  }
  print_table_with_words(
      formatted("%7s %7s %8s %10s %8s %8s %8s %5s", "devices", "in turn", "compute", "all-reduce",
                "step", "images/s", "speed-up", "added"),
      figures, last_heading, lasts, "devices", keys);
  const timing::StepVerdict verdict = timing::step_verdict(rows, "--batch-per-replica");
  say(timing::pays_rule_sentence() + " " + verdict.verdict);
  if (!verdict.why.empty()) say(verdict.why);
  say(timing::step_left_out_sentence());
}

std::string compute_out_of_memory(const StepPlan& plan, const std::string& what) {
  return what + ": one replica's compute cannot be measured at --batch-per-replica " +
         std::to_string(plan.batch_per_replica) +
         ". Give a smaller --batch-per-replica or a higher --memory-limit" +
         (plan.strategy.model == core::ModelKind::kCnn ? ", or --model mlp" : "");
}

}  // namespace mirrorlab::app
