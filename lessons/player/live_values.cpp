#include "lessons/player/live_values.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/session/step_figures.h"
#include "core/strategy/events/run_events.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace mirrorlab::lessons {
namespace {

using Value = std::optional<double>;
constexpr double kMiB = 1024.0 * 1024.0;

const core::RecordedStep* recorded(const LiveRun& run) {
  const core::RecordedStep& r = run.snapshot->step_record;
  return r.step < 0 ? nullptr : &r;
}

const core::ReplicaRecord* replica_record(const LiveRun& run, int replica) {
  const core::RecordedStep* r = recorded(run);
  if (!r || replica < 0 || replica >= static_cast<int>(r->replicas.size())) return nullptr;
  return &r->replicas[static_cast<std::size_t>(replica)];
}

// Over the chosen layer's recorded values: the largest difference between two replicas.
Value spread(const LiveRun& run, bool before) {
  const core::RecordedStep* r = recorded(run);
  return r ? core::gradient_spread(*r, before) : std::nullopt;
}

Value transfer_bytes(const LiveRun& run, int replica, bool to_me, bool first_step_only) {
  return core::all_reduce_bytes(run.snapshot->step_record, replica, to_me,
                                first_step_only ? 1 : SIZE_MAX);
}

const core::DeviceStatus* device(const LiveRun& run, int replica) {
  const auto& d = run.snapshot->devices;
  if (replica < 0 || replica >= static_cast<int>(d.size())) return nullptr;
  return &d[static_cast<std::size_t>(replica)];
}

Value step_ms(const LiveRun& run) { return core::mean_step_ms(run.snapshot->steps); }

const std::vector<LiveValue> kValues = {
    {"replicas", "replicas in sync (devices the strategy mirrors the model on, every worker's)",
     false,
     [](const LiveRun& run, int) -> Value {
       return static_cast<double>(run.snapshot->replicas_in_sync);
     }},
    {"workers", "workers training together (1: this process alone)", false,
     [](const LiveRun& run, int) -> Value {
       return static_cast<double>(std::max<std::size_t>(1, run.snapshot->workers.size()));
     }},
    {"global_batch", "examples in a full global batch (per replica x replicas)", false,
     [](const LiveRun& run, int) -> Value {
       return static_cast<double>(run.snapshot->global_batch);
     }},
    {"steps_per_epoch", "global steps in one epoch", false,
     [](const LiveRun& run, int) -> Value {
       return static_cast<double>(run.snapshot->steps_per_epoch);
     }},
    {"steps_done", "global steps run so far", false,
     [](const LiveRun& run, int) -> Value {
       return static_cast<double>(run.snapshot->steps_done);
     }},
    {"batch_examples", "examples in the current (or last) step's global batch", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       return r ? Value(static_cast<double>(r->indices.size())) : std::nullopt;
     }},
    {"shard_examples", "examples of that step's batch given to one replica", true,
     [](const LiveRun& run, int replica) -> Value {
       const core::ReplicaRecord* r = replica_record(run, replica);
       return r ? Value(static_cast<double>(r->shard_count)) : std::nullopt;
     }},
    {"fewest_examples_replica",
     "the replica given the fewest examples of that step's batch (the first, on a tie; -1 when "
     "all have as many)",
     false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       if (!r || r->replicas.empty()) return std::nullopt;
       const auto fewest = std::min_element(
           r->replicas.begin(), r->replicas.end(),
           [](const auto& a, const auto& b) { return a.shard_count < b.shard_count; });
       const bool even = std::all_of(r->replicas.begin(), r->replicas.end(), [&](const auto& x) {
         return x.shard_count == fewest->shard_count;
       });
       return even ? -1.0 : static_cast<double>(fewest - r->replicas.begin());
     }},
    {"empty_shards", "replicas given no example at all of that step's batch", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       if (!r || r->replicas.empty()) return std::nullopt;
       return static_cast<double>(std::count_if(r->replicas.begin(), r->replicas.end(),
                                                [](const auto& x) { return x.shard_count == 0; }));
     }},
    {"gradient_scale",
     "how much the summed gradient of that step weighs against the mean gradient one device "
     "computes on the same batch: the sum over replicas of loss scale x examples (1 when the "
     "loss is scaled right)",
     false,
     [](const LiveRun& run, int) -> Value {
       // The record holds worker 0's replicas only: with several workers it is not measured.
       if (run.snapshot->workers.size() > 1) return std::nullopt;
       return core::gradient_weight(run.snapshot->step_record, run.loss_scaling);
     }},
    {"gradient_norm", "L2 norm of one replica's gradients before the all-reduce", true,
     [](const LiveRun& run, int replica) -> Value {
       const core::ReplicaRecord* r = replica_record(run, replica);
       if (!r || r->gradient_norms.empty()) return std::nullopt;
       double sq = 0;
       for (double n : r->gradient_norms) sq += n * n;
       return std::sqrt(sq);
     }},
    {"gradient_spread_before",
     "largest difference between two replicas' gradients (the recorded layer) before the "
     "all-reduce",
     false, [](const LiveRun& run, int) { return spread(run, true); }},
    {"gradients_differ", "1 when two replicas' gradients differ before the all-reduce, else 0",
     false,
     [](const LiveRun& run, int) -> Value {
       const Value s = spread(run, true);
       return s ? Value(*s > 0 ? 1.0 : 0.0) : std::nullopt;
     }},
    {"gradient_spread_after", "the same after the all-reduce", false,
     [](const LiveRun& run, int) { return spread(run, false); }},
    {"replicas_in_sync",
     "1 when every replica's weights have the same fingerprint after the "
     "update, else 0",
     false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       if (!r || !r->complete) return std::nullopt;
       const std::optional<bool> same = core::weights_in_sync(*r);
       return same ? Value(*same ? 1.0 : 0.0) : std::nullopt;
     }},
    {"allreduce_steps", "steps (barriers) of one all-reduce with this algorithm", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       return r && r->all_reduce_steps > 0 ? Value(r->all_reduce_steps) : std::nullopt;
     }},
    {"across_workers_step",
     "which step of the all-reduce (from 1) goes across workers; 0 when it has none", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       if (!r || r->all_reduce_steps == 0) return std::nullopt;
       for (std::size_t i = 0; i < r->collective_steps.size(); ++i) {
         if (r->collective_steps[i].phase == vgpu::kAcrossWorkersPhase) {
           return static_cast<double>(i + 1);
         }
       }
       // Not seen: none, once the whole all-reduce is recorded; not yet, while it runs.
       return r->collective_steps.size() == static_cast<std::size_t>(r->all_reduce_steps)
                  ? Value(0.0)
                  : std::nullopt;
     }},
    {"allreduce_bytes_received_first_step",
     "bytes one replica receives in the all-reduce's first step", true,
     [](const LiveRun& run, int replica) { return transfer_bytes(run, replica, true, true); }},
    {"allreduce_bytes_received", "bytes one replica receives in the whole all-reduce", true,
     [](const LiveRun& run, int replica) { return transfer_bytes(run, replica, true, false); }},
    {"allreduce_bytes_sent", "bytes one replica sends in the whole all-reduce", true,
     [](const LiveRun& run, int replica) { return transfer_bytes(run, replica, false, false); }},
    {"gradient_bytes", "bytes of one replica's gradients (what is all-reduced)", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       if (!r || r->layers.empty()) return std::nullopt;
       const core::RecordedLayer& last = r->layers.back();
       return static_cast<double>((last.offset + last.params) * sizeof(float));
     }},
    {"packs", "gradient packs of a step, each all-reduced on its own (1: one buffer)", false,
     [](const LiveRun& run, int) -> Value {
       const core::RecordedStep* r = recorded(run);
       return r ? Value(static_cast<double>(r->packs)) : std::nullopt;
     }},
    {"allreduce_hidden_percent",
     "of the all-reduces' time in the steps after the first, the share spent while the same "
     "device's backward still ran (packs overlapping backward), percent",
     false,
     [](const LiveRun& run, int) -> Value {
       const core::HiddenAllReduce h = core::hidden_all_reduce(run.snapshot->events, 1);
       if (h.all_reduce <= 0) return std::nullopt;
       return 100 * h.hidden / h.all_reduce;
     }},
    {"first_pack_during_backward_percent",
     "of the steps after the first, on every device, the share whose first pack the device asked "
     "to all-reduce while its backward still ran (packs overlapping backward), percent",
     false,
     [](const LiveRun& run, int) -> Value {
       const core::PacksDuringBackward p = core::packs_during_backward(run.snapshot->events, 1);
       if (p.pairs == 0) return std::nullopt;
       return 100.0 * p.early / p.pairs;
     }},
    {"loss", "mean loss of the last step's global batch", false,
     [](const LiveRun& run, int) -> Value {
       const auto& s = run.snapshot->steps;
       return s.empty() ? std::nullopt : Value(s.back().loss);
     }},
    {"accuracy", "accuracy on the last step's global batch", false,
     [](const LiveRun& run, int) -> Value {
       const auto& s = run.snapshot->steps;
       return s.empty() ? std::nullopt : Value(s.back().accuracy);
     }},
    {"step_ms", "mean time of the last (up to 20) steps, in milliseconds", false,
     [](const LiveRun& run, int) { return step_ms(run); }},
    {"memory_limit_mib", "one device's memory limit, MiB", true,
     [](const LiveRun& run, int replica) -> Value {
       const core::DeviceStatus* d = device(run, replica);
       return d ? Value(static_cast<double>(d->limit) / kMiB) : std::nullopt;
     }},
    {"memory_peak_mib", "the most of its memory one device has used, MiB", true,
     [](const LiveRun& run, int replica) -> Value {
       const core::DeviceStatus* d = device(run, replica);
       return d ? Value(static_cast<double>(d->peak) / kMiB) : std::nullopt;
     }},
    {"distance_to_one_device",
     "largest difference between replica 0's weights and those of one device trained on the "
     "same batches",
     false, [](const LiveRun& run, int) { return run.distance_to_one_device; }},
    {"distance_to_one_worker",
     "largest difference between replica 0's weights and those of one worker of as many "
     "replicas (gpus x workers devices in one process) trained on the same batches",
     false, [](const LiveRun& run, int) { return run.distance_to_one_worker; }},
    {"reconfigure_refused",
     "1 when the devices in use refused the step's reconfigure_devices, 0 when they took it", false,
     [](const LiveRun& run, int) -> Value {
       if (!run.reconfigure_refused) return std::nullopt;
       return *run.reconfigure_refused ? 1.0 : 0.0;
     }},
    {"run_failed",
     "1 when the run could not be built (out of memory, ...) or a step failed, "
     "else 0",
     false, [](const LiveRun& run, int) -> Value { return run.run_failed ? 1.0 : 0.0; }},
};

template <ModelQuantity q>
Value from_model(const LiveRun& run, int) {
  return run.model ? model_value(*run.model, q, run.devices) : std::nullopt;
}

const std::vector<LiveValue> kModelValues = {
    {"model_gpus", "GPUs of the step's machine (`topology`)", false,
     from_model<ModelQuantity::kGpus>, true},
    {"model_reduce_to_one_us",
     "predicted microseconds of one all-reduce of the run's model's gradients on the machine, "
     "TensorFlow's fallback: every gradient added on one GPU, the sum sent back",
     false, from_model<ModelQuantity::kReduceToOneUs>, true},
    {"model_ring_us",
     "the same for TensorFlow's RING: reduce-scatter, then all-gather, chunk by chunk", false,
     from_model<ModelQuantity::kRingUs>, true},
    {"model_nccl_us", "the same for NCCL, by NCCL's own tuning model (none where NCCL cannot run)",
     false, from_model<ModelQuantity::kNcclUs>, true},
    {"model_nccl_runs", "1 where NCCL can run on the machine (a GPU of its own per rank), else 0",
     false, from_model<ModelQuantity::kNcclRuns>, true},
    {"model_nccl_algorithm", "what NCCL's model picks there: 0 Tree, 1 Ring, 2 NVLS", false,
     from_model<ModelQuantity::kNcclAlgorithm>, true},
    {"model_compute_us",
     "one replica's compute of a step (forward, backward, update) on one of the machine's GPUs: "
     "its FLOPs over the GPU's FLOP/s",
     false, from_model<ModelQuantity::kComputeUs>, true, true},
    {"model_step_us",
     "one training step: the compute plus the all-reduce TensorFlow would run there (NCCL with "
     "a GPU per replica, else its RING)",
     false, from_model<ModelQuantity::kStepUs>, true, true},
    {"model_speedup", "images/s over one device's, at the run's batch per replica", false,
     from_model<ModelQuantity::kSpeedup>, true, true},
    {"model_paying_devices",
     "the most devices before another one stops paying for itself (adds less than half a "
     "device's images/s)",
     false, from_model<ModelQuantity::kPayingDevices>, true, true},
    {"model_packed_step_us",
     "model_step_us with the run's gradient packs: each pack all-reduced on its own, while "
     "backward still runs where the run overlaps them",
     false, from_model<ModelQuantity::kPackedStepUs>, true, true},
    {"model_packs_allreduce_us",
     "those packs' all-reduces added up, hidden or not (each pays its own latency)", false,
     from_model<ModelQuantity::kPacksAllReduceUs>, true, true},
    {"model_packs_hidden_percent",
     "the share of those all-reduces the model hides behind backward, percent", false,
     from_model<ModelQuantity::kPacksHiddenPercent>, true, true},
};

std::vector<LiveValue> all_values() {
  std::vector<LiveValue> all = kValues;
  all.insert(all.end(), kModelValues.begin(), kModelValues.end());
  return all;
}

}  // namespace

const std::vector<LiveValue>& live_values() {
  static const std::vector<LiveValue> all = all_values();
  return all;
}

const LiveValue* find_live_value(std::string_view name) {
  for (const LiveValue& v : live_values()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::string live_value_names() {
  std::string names;
  for (const LiveValue& v : live_values()) {
    names += (names.empty() ? "" : ", ") + std::string(v.name);
  }
  return names;
}

}  // namespace mirrorlab::lessons
