// The live values a lesson reads from the timing model (docs/timing-model.md) rather than from
// the run: what an all-reduce and a training step of the lesson's model would cost on the
// machine a step names (`topology = "dgx-h100"`), on `devices = N` of its GPUs (all by default).
// They are worked out, not measured, so a check on them holds on any machine.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/strategy/gradient_packs.h"
#include "timing/topology.h"

namespace mirrorlab::lessons {

// The machine a step's model values speak of, and what of the run they price: its model,
// optimizer and batch per replica.
struct ModelContext {
  std::shared_ptr<const timing::Topology> topology;  // null: none named, or `problem`
  std::string problem;  // why the named machine could not be read ("this-machine: not fitted")
  core::ModelKind model = core::ModelKind::kMlp;
  core::OptimizerConfig optimizer;
  double batch_per_replica = 32;
  core::PackOptions packs;  // the run's gradient packs (the packed quantities price them)
};

// What a model value is asked about. `devices`: GPUs of the machine (0: all of them).
enum class ModelQuantity {
  kGpus,                // the machine's GPUs
  kReduceToOneUs,       // reduce-to-one of the model's gradients, microseconds
  kRingUs,              // the ring
  kNcclUs,              // NCCL's choice by its own tuning model (none where NCCL cannot run)
  kNcclRuns,            // 1 where NCCL can run (a GPU of its own per rank), else 0
  kNcclAlgorithm,       // what NCCL picks: 0 Tree, 1 Ring, 2 NVLS (NCCL's order)
  kComputeUs,           // one replica's step: its FLOPs over the machine's FLOP/s
  kStepUs,              // one training step: compute (in turns where engines are shared) plus
                        // the all-reduce TensorFlow would run (NCCL where it can, else the ring)
  kSpeedup,             // images/s on `devices` over one device's, at a fixed batch per replica
  kPayingDevices,       // the most devices before one stops paying for itself
  kPackedStepUs,        // kStepUs with the run's gradient packs (and overlap, where the run has it)
  kPacksAllReduceUs,    // those packs' all-reduces, every one, hidden or not
  kPacksHiddenPercent,  // the share of them overlap hides behind backward, percent
};

// The value, or nullopt where the machine gives none (no NCCL, no FLOP/s, fewer GPUs, no machine).
std::optional<double> model_value(const ModelContext& context, ModelQuantity quantity, int devices);

}  // namespace mirrorlab::lessons
