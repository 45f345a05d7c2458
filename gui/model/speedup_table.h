// The Compare panel's training step on a machine, as data (timing/step_time.h): for the run shown
// in the window (its model, optimizer and batch per replica), one step on 1 to all of a machine's
// GPUs, the speed-up as devices are added and where another device stops paying for itself, with
// the sentences `mirrorlab compare` prints (timing/step_words.h). The all-reduce is TensorFlow
// 2.21's choice there (NCCL where the machine has it, else the ring). One replica's compute is
// the model's FLOPs over a preset's FLOP/s (a lower bound), or, on this-machine, measured from the
// run's own steps. Drawn by compare_speedup_view.cpp, computed when its inputs change.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/session/training_session.h"
#include "core/strategy/gradient_packs.h"
#include "core/strategy/replica_compute.h"
#include "timing/step_time.h"
#include "timing/step_words.h"
#include "timing/topology.h"

namespace mirrorlab::gui {

// What of the run the table prices.
struct RunModel {
  core::ModelKind model = core::ModelKind::kMlp;
  core::OptimizerConfig optimizer;
  std::size_t batch_per_replica = 0;
  core::PackOptions packs;  // the run's gradient packs
  // A model of the user's (from Python), which the timing model does not predict; empty: `model`.
  std::vector<core::LayerSpec> layers;
  std::size_t params() const;  // the model's parameters (its gradients' floats)
};
RunModel run_model_of(const core::SessionConfig& config);

// One replica's compute measured in the run itself, from its phase events.
struct RunCompute {
  core::ReplicaCompute phases;  // medians per replica over the steps counted
  int devices = 0;              // the run's
  int turns = 1;  // replicas each engine of the machine computed one after another in the run
  // One replica alone: the median over `turns` (replicas sharing an engine each took that much
  // longer).
  double seconds() const { return phases.seconds / turns; }
};
// Steps counted: the last kComputeSteps full steps (a whole global batch), the run's first left
// out (first touches of memory); none before kFewestComputeSteps of them.
inline constexpr int kComputeSteps = 20;
inline constexpr int kFewestComputeSteps = 3;
// The full steps after the first that `run` has taken, up to kComputeSteps (0-based event steps,
// ascending).
std::vector<std::int64_t> compute_steps_of(const core::SessionSnapshot& run);
// nullopt before kFewestComputeSteps such steps. `machine` gives the engines the run's replicas
// shared.
std::optional<RunCompute> run_compute(const core::SessionSnapshot& run,
                                      const timing::Topology& machine);

struct SpeedupTable {
  std::string problem;    // why there is no table, as a sentence ("" when there is one)
  std::string heading;    // what the table is of
  std::string algorithm;  // the all-reduce: TensorFlow's choice on the machine
  bool nccl = false;
  std::string all_reduce;  // timing::all_reduce_sentence()
  int engines = 0;         // timing::compute_engines()
  std::string engines_text;
  double compute = 0;          // one replica's, seconds
  std::string compute_source;  // how it was worked out, as `mirrorlab compare` says it
  // Where it is priced from its kernels (timing/compute_model.h): its parts; else none.
  std::optional<timing::ComputeTime> compute_parts;
  double overlapped = 0;        // of it, what replicas sharing a card do at once (StepInputs)
  std::string compute_numbers;  // where the kernels' prices come from (the machine's [compute])
  // In a few words each, above the table: the compute and where it is from, the all-reduce.
  std::string summary;
  std::vector<timing::StepTime> rows;
  // Where the run's gradients go in several packs: `rows` price them, and these the same steps
  // with one buffer (empty: one buffer).
  std::vector<timing::StepTime> one_buffer;
  std::string packs_text;      // the packs and how the table prices them, as a sentence
  bool packs_overlap = false;  // and each is all-reduced beside backward: `rows`' all-reduce is
                               // what backward leaves of it
  timing::StopPoint stop;
  timing::StepVerdict verdict;
};
// On `machine`, all of its GPUs. `measured_here`: the machine is this one (this-machine), whose
// compute is `live` (nullopt: not yet measured, a sentence says to take a few steps); elsewhere
// the model's FLOPs over the machine's FLOP/s (none: a sentence). Never throws.
SpeedupTable predict_speedup(const timing::Topology& machine, bool measured_here,
                             const RunModel& run, const std::optional<RunCompute>& live,
                             timing::SecondsText seconds_text = timing::time_text);

}  // namespace mirrorlab::gui
