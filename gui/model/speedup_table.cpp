#include "gui/model/speedup_table.h"

#include <algorithm>
#include <stdexcept>

#include "core/nn/training_flops.h"
#include "core/strategy/step_kernels.h"
#include "gui/drawing/chart.h"
#include "virtualgpu/collectives/all_reduce_choice.h"

namespace mirrorlab::gui {
namespace {

std::string steps_text(int n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); }

// Where the run's compute comes from, in the words of `mirrorlab compare`'s measured line.
std::string measured_source(const RunCompute& c, const timing::Topology& machine,
                            timing::SecondsText text) {
  const core::ReplicaCompute& p = c.phases;
  std::string source = "measured in this run on " + std::to_string(c.devices) + " device" +
                       (c.devices == 1 ? "" : "s") +
                       ": each replica's forward, backward and update, the median over its last " +
                       steps_text(p.steps) + ", " + text(p.seconds) + " (forward " +
                       text(p.forward) + ", backward " + text(p.backward) + ", update " +
                       text(p.update) + ")";
  if (c.turns > 1) {
    source += "; " + std::to_string(c.turns) + " replicas took turns on each of " + machine.id +
              "'s engines, so one alone: " + text(p.seconds) + " / " + std::to_string(c.turns) +
              " = " + text(c.seconds());
  }
  return source;
}

}  // namespace

RunModel run_model_of(const core::SessionConfig& config) {
  return {config.settings.model, config.settings.optimizer, config.settings.batch_per_replica,
          config.settings.packs, config.layers};
}

std::size_t RunModel::params() const {
  return (layers.empty() ? core::training_flops(model, optimizer)
                         : core::training_flops(layers, optimizer))
      .params;
}

std::vector<std::int64_t> compute_steps_of(const core::SessionSnapshot& run) {
  std::vector<std::int64_t> steps;
  for (auto r = run.steps.rbegin(); r != run.steps.rend(); ++r) {
    if (static_cast<int>(steps.size()) == kComputeSteps) break;
    // StepRecord counts from 1, events from 0; the first step pays for first touches.
    if (r->step <= 1) break;
    if (run.global_batch > 0 && r->examples == static_cast<std::int64_t>(run.global_batch)) {
      steps.push_back(r->step - 1);
    }
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

std::optional<RunCompute> run_compute(const core::SessionSnapshot& run,
                                      const timing::Topology& machine) {
  const std::vector<std::int64_t> steps = compute_steps_of(run);
  if (static_cast<int>(steps.size()) < kFewestComputeSteps) return std::nullopt;
  RunCompute c;
  c.phases = core::replica_compute_of(run.events, steps);
  if (c.phases.steps < kFewestComputeSteps || !(c.phases.seconds > 0)) return std::nullopt;
  c.devices = std::max<int>(1, static_cast<int>(run.devices.size()));
  const int engines = timing::compute_engines(machine);
  c.turns = engines > 0 ? (c.devices + engines - 1) / engines : 1;
  return c;
}

SpeedupTable predict_speedup(const timing::Topology& t, bool measured_here, const RunModel& run,
                             const std::optional<RunCompute>& live,
                             timing::SecondsText seconds_text) {
  SpeedupTable out;
  if (!run.layers.empty()) {
    out.problem =
        "The timing model predicts a training step of mirrorlab's CNN and MLP, whose "
        "kernels it knows; this run's model (" +
        core::describe(run.layers) + ") is neither. The all-reduce of its " +
        format_bytes(static_cast<double>(run.params() * sizeof(float))) +
        " of gradients is predicted on the other tab; mirrorlab compare --model cnn "
        "or mlp predicts a whole step.";
    return out;
  }
  const core::TrainingFlops flops = core::training_flops(run.model, run.optimizer);
  const double gradient_bytes = static_cast<double>(flops.params) * sizeof(float);
  const vgpu::AllReduceAlgorithm& choice = vgpu::modelled_tensorflow_choice(t);
  out.algorithm = std::string(choice.name);
  out.nccl = choice.schedule == nullptr;
  out.all_reduce = timing::all_reduce_sentence(out.algorithm, true, out.nccl);
  out.engines = timing::compute_engines(t);
  out.engines_text = timing::engines_sentence(t, out.engines);
  out.heading = "One training step of the " + std::string(core::to_string(run.model)) + " at " +
                std::to_string(run.batch_per_replica) + " examples per replica with " +
                core::to_string(run.optimizer.kind) + " (" + format_bytes(gradient_bytes) +
                " of gradients to all-reduce each step), on 1 to " + std::to_string(t.ranks()) +
                " GPUs of " + t.id + ".";
  if (run.batch_per_replica == 0) {
    out.problem = "The run has no batch per replica to price.";
    return out;
  }
  std::string packs_summary;
  try {
    if (measured_here) {
      if (!live) {
        const std::string last = std::to_string(kComputeSteps);
        const std::string fewest = std::to_string(kFewestComputeSteps + 1);
        out.problem = "On " + t.id +
                      " one replica's compute is measured from this run's own steps (forward, "
                      "backward and update of each replica, the median of the last " +
                      last +
                      " full steps after the first): it needs a few steps. Press Run or "
                      "One step (" +
                      fewest +
                      " steps at least), or choose a preset, whose "
                      "compute is scaled to its FLOP/s.";
        return out;
      }
      out.compute = live->seconds();
      out.compute_source = measured_source(*live, t, seconds_text);
      out.summary = "Compute of one replica: " + seconds_text(out.compute) +
                    ", measured in this run (the median of its last " +
                    steps_text(live->phases.steps) + ").";
    } else {
      if (!t.compute.given() && !(t.flops > 0)) {
        out.problem = t.id + " gives neither a [compute] table nor a FLOP/s (flops_tflops) in " +
                      "its file" + (t.path.empty() ? std::string() : " " + t.path) +
                      ", so one replica's compute cannot be priced on it: add one there, or "
                      "choose a machine that gives it.";
        return out;
      }
      const core::ModelledCompute c =
          core::modelled_compute(run.model, run.optimizer, run.batch_per_replica, t, seconds_text);
      out.compute = c.seconds;
      out.compute_parts = c.from_kernels ? std::optional(c.parts) : std::nullopt;
      out.overlapped = c.overlapped;
      out.compute_source = c.source;
      if (c.from_kernels) {
        out.summary = "Compute of one replica: " + seconds_text(out.compute) + " = " +
                      std::to_string(c.parts.kernels) + " launches " +
                      seconds_text(c.parts.launches) + " + FLOPs " + seconds_text(c.parts.flops) +
                      " + bytes " + seconds_text(c.parts.bytes) + " + host " +
                      seconds_text(c.parts.host) + " (how: below).";
        out.compute_numbers = t.compute.source;
      } else {
        out.summary = "Compute of one replica: " + seconds_text(out.compute) + ", its FLOPs at " +
                      t.id + "'s peak FLOP/s (a lower bound).";
      }
    }
    timing::StepInputs inputs;
    inputs.replica_compute = out.compute;
    inputs.engines = out.engines;
    inputs.batch_per_replica = static_cast<double>(run.batch_per_replica);
    inputs.overlapped = out.overlapped;
    out.rows = timing::predict_steps(t, choice.schedule, gradient_bytes, inputs, t.ranks());
    const std::vector<core::GradientPack> packs =
        core::set_step_packs(inputs, run.model, run.optimizer, run.batch_per_replica, run.packs);
    if (packs.size() > 1) {
      out.one_buffer = std::move(out.rows);
      out.rows = timing::predict_steps(t, choice.schedule, gradient_bytes, inputs, t.ranks());
      out.packs_overlap = run.packs.overlap;
      out.packs_text = core::packs_step_sentence(packs, run.packs, t, seconds_text(inputs.backward),
                                                 "overlap off in Controls");
      packs_summary = " Gradients in " + std::to_string(packs.size()) + " packs" +
                      (run.packs.overlap ? ", each all-reduced as backward writes it ('all-reduce "
                                           "left': what backward does not hide)"
                                         : "") +
                      ": 'step' with them, 'one buffer' without.";
    }
  } catch (const std::invalid_argument& e) {
    out.rows.clear();
    out.problem = t.id + " cannot price this step: " + e.what() + ".";
    return out;
  }
  out.summary += " All-reduce: " + out.algorithm + ", TensorFlow 2.21's choice " +
                 (out.nccl ? "with a GPU per replica, timed by NCCL's own model."
                           : "where NCCL cannot run, timed step by step.");
  out.summary += packs_summary;
  out.stop = timing::where_adding_stops(out.rows);
  out.verdict = timing::step_verdict(out.rows, "batch/replica (Controls)", seconds_text);
  return out;
}

}  // namespace mirrorlab::gui
