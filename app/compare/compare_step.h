// The training step in `mirrorlab compare` (issue 14): for the chosen model and per-replica
// batch, the time of one step on 1 to N devices, the speed-up as devices are added, and where
// another device stops paying for itself (timing/step_time.h). One replica's compute is measured
// here (core/strategy/replica_compute.h) or scaled from the model's FLOPs to a topology's FLOP/s
// (core/nn/training_flops.h); the all-reduce of its gradients is the timing model's prediction.
//
// The model's flags are train's own (same names, checks and defaults): --model,
// --batch-per-replica, --optimizer, --allreduce; --compute says where the compute comes from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "app/flags/cli_declarations.h"
#include "app/flags/train_flags.h"
#include "core/nn/training_flops.h"
#include "core/strategy/replica_compute.h"
#include "timing/step_time.h"
#include "timing/topology.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::app {

inline constexpr const char* kComputeAuto = "auto";
inline constexpr const char* kComputeMeasured = "measured";
inline constexpr const char* kComputeFlops = "flops";

struct StepFlags {
  core::RunSettings settings;  // the model, batch, optimizer and all-reduce: train's flags
  std::string compute = kComputeAuto;
  int compute_steps = 30;
};

void add_step_flags(CLI::App* command, StepFlags& flags);

// What the table is made of, decided before anything is measured.
struct StepPlan {
  core::StrategyOptions strategy;  // the model and optimizer, as train takes them
  std::size_t batch_per_replica = 0;
  std::string algorithm;  // the all-reduce, a name of the table of algorithms
  bool algorithm_was_auto = false;
  timing::ScheduleMaker schedule = nullptr;  // nullptr: NCCL's own model
  bool measure = false;                      // the compute measured on a device, else FLOPs
  core::TrainingFlops flops;
  int compute_steps = 0;
  int max_devices = 0;
};

// "" with *plan filled, or what the flags ask that cannot be given, as a sentence naming the
// flag. `topology`: the preset or file of --topology; nullptr for the devices at hand, whose
// fitted topology is one shared memory with neither NCCL nor a FLOP/s (their compute is measured).
std::string plan_step(const StepFlags& flags, const timing::Topology* topology, int max_devices,
                      StepPlan* plan);

// One replica's compute, and where it came from, in words (printed above the table).
struct ReplicaComputeTime {
  double seconds = 0;
  std::string source;
  double overlapped = 0;  // what replicas sharing a card do at once (timing::StepInputs)
};

// Times one replica on `device` (a few dozen steps, saying how far it is), when plan.measure.
// Returns false when `stop` asked first. Throws vgpu::OutOfMemoryError when the model and its
// batch do not fit the device.
bool measure_compute(const StepPlan& plan, vgpu::Device& device, const std::function<bool()>& stop,
                     ReplicaComputeTime* out);
// The compute the timing model gives on `topology` (its kernels priced by its [compute], or its
// FLOPs at its FLOP/s where it gives none), when !plan.measure.
ReplicaComputeTime modelled_compute(const StepPlan& plan, const timing::Topology& topology);

// The table: 1 to plan.max_devices devices of `topology`, the stop point and what it assumes.
void print_step_table(const StepPlan& plan, const timing::Topology& topology,
                      const ReplicaComputeTime& compute);

// What to tell a user whose model and batch did not fit the device the compute is measured on.
std::string compute_out_of_memory(const StepPlan& plan, const std::string& what);

}  // namespace mirrorlab::app
