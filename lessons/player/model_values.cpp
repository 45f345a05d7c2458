#include "lessons/player/model_values.h"

#include <algorithm>
#include <stdexcept>

#include "core/nn/training_flops.h"
#include "core/strategy/step_kernels.h"
#include "timing/nccl_model.h"
#include "timing/schedule.h"
#include "timing/step_time.h"
#include "virtualgpu/collectives/all_reduce_choice.h"

namespace mirrorlab::lessons {
namespace {

timing::ScheduleMaker ring() { return vgpu::find_all_reduce(vgpu::kRingName)->schedule; }

// What TensorFlow 2.21 runs (docs/tensorflow-conformance.md): NCCL with a GPU of its own per
// replica, else the ring (CollectiveAllReduce, RING).
timing::ScheduleMaker tensorflow_choice(const timing::Topology& t) {
  return vgpu::modelled_tensorflow_choice(t).schedule;
}

std::optional<double> all_reduce_us(const ModelContext& c, timing::ScheduleMaker schedule,
                                    int devices) {
  const core::TrainingFlops f = core::training_flops(c.model, c.optimizer);
  const double bytes = static_cast<double>(f.params * sizeof(float));
  return timing::all_reduce_time(*c.topology, schedule, devices, bytes).seconds * 1e6;
}

// One replica's compute on the context's machine (core/strategy/step_kernels.h).
core::ModelledCompute replica_compute(const ModelContext& c) {
  return core::modelled_compute(c.model, c.optimizer, static_cast<std::size_t>(c.batch_per_replica),
                                *c.topology);
}

// The step on 1 to all of the machine's GPUs: with the gradients in one buffer, or `packed`, in
// the run's packs.
std::vector<timing::StepTime> steps(const ModelContext& c, bool packed = false) {
  const timing::Topology& t = *c.topology;
  const core::TrainingFlops f = core::training_flops(c.model, c.optimizer);
  const core::ModelledCompute compute = replica_compute(c);
  timing::StepInputs inputs;
  inputs.replica_compute = compute.seconds;
  inputs.engines = timing::compute_engines(t);
  inputs.batch_per_replica = c.batch_per_replica;
  inputs.overlapped = compute.overlapped;
  if (packed) {
    core::set_step_packs(inputs, c.model, c.optimizer,
                         static_cast<std::size_t>(c.batch_per_replica), c.packs);
  }
  return timing::predict_steps(t, tensorflow_choice(t),
                               static_cast<double>(f.params * sizeof(float)), inputs, t.ranks());
}

const timing::StepTime* row(const std::vector<timing::StepTime>& rows, int devices) {
  const auto at = std::find_if(rows.begin(), rows.end(),
                               [&](const timing::StepTime& r) { return r.devices == devices; });
  return at == rows.end() ? nullptr : &*at;
}

}  // namespace

std::optional<double> model_value(const ModelContext& c, ModelQuantity q, int devices) {
  if (!c.topology) return std::nullopt;
  const timing::Topology& t = *c.topology;
  if (devices == 0) devices = t.ranks();
  if (devices < 1 || devices > t.ranks()) return std::nullopt;
  try {
    switch (q) {
      case ModelQuantity::kGpus:
        return static_cast<double>(t.ranks());
      case ModelQuantity::kReduceToOneUs:
        return all_reduce_us(c, timing::reduce_to_one_schedule, devices);
      case ModelQuantity::kRingUs:
        return all_reduce_us(c, ring(), devices);
      case ModelQuantity::kNcclUs:
        if (!t.has_nccl) return std::nullopt;
        return all_reduce_us(c, nullptr, devices);
      case ModelQuantity::kNcclRuns:
        return t.has_nccl ? 1.0 : 0.0;
      case ModelQuantity::kNcclAlgorithm: {
        if (!t.has_nccl || devices < 2) return std::nullopt;
        const core::TrainingFlops f = core::training_flops(c.model, c.optimizer);
        const int nodes = std::max(1, (devices + t.gpus_per_node - 1) / t.gpus_per_node);
        const timing::NcclCost choice = timing::nccl_choice(
            t.nccl, devices, nodes, static_cast<double>(f.params * sizeof(float)));
        return static_cast<double>(choice.algorithm);
      }
      case ModelQuantity::kComputeUs:
        return replica_compute(c).seconds * 1e6;
      case ModelQuantity::kStepUs:
      case ModelQuantity::kSpeedup: {
        const std::vector<timing::StepTime> rows = steps(c);
        const timing::StepTime* r = row(rows, devices);
        if (!r) return std::nullopt;
        return q == ModelQuantity::kStepUs ? r->seconds * 1e6 : r->speedup;
      }
      case ModelQuantity::kPayingDevices:
        return static_cast<double>(timing::where_adding_stops(steps(c)).devices);
      case ModelQuantity::kPackedStepUs:
      case ModelQuantity::kPacksAllReduceUs:
      case ModelQuantity::kPacksHiddenPercent: {
        const std::vector<timing::StepTime> rows = steps(c, /*packed=*/true);
        const timing::StepTime* r = row(rows, devices);
        if (!r) return std::nullopt;
        const double total = r->all_reduce_total;
        if (q == ModelQuantity::kPackedStepUs) return r->seconds * 1e6;
        if (q == ModelQuantity::kPacksAllReduceUs) return total * 1e6;
        return total > 0 ? 100 * (total - r->all_reduce) / total : 0.0;
      }
    }
  } catch (const std::invalid_argument&) {
    // The machine cannot say: no FLOP/s, NCCL on a machine where it cannot run, a count that is
    // not whole nodes.
  }
  return std::nullopt;
}

}  // namespace mirrorlab::lessons
