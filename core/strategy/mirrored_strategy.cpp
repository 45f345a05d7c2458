#include "core/strategy/mirrored_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <thread>

#include "core/nn/batch.h"
#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/cuda/gpu_model_api.h"
#include "core/nn/cuda/ops_cuda.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/cuda/gpu_work_counts.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace mirrorlab::core {

std::vector<Shard> split_global_batch(std::size_t global_count, int num_replicas,
                                      std::size_t per_replica_batch) {
  if (num_replicas <= 0 || global_count > num_replicas * per_replica_batch) {
    throw std::invalid_argument("a global batch of " + std::to_string(global_count) +
                                " examples does not fit " + std::to_string(num_replicas) +
                                " replicas of " + std::to_string(per_replica_batch) +
                                " examples each");
  }
  // TensorFlow rebatches each batch it is given, whatever its size: every replica takes
  // ceil(count / replicas) consecutive examples until none are left (tf.distribute 2.21, checked
  // by scripts/check-tensorflow). A full batch gives each its per-replica batch.
  const std::size_t n = static_cast<std::size_t>(num_replicas);
  const std::size_t each = (global_count + n - 1) / n;
  std::vector<Shard> shards;
  for (int r = 0; r < num_replicas; ++r) {
    const std::size_t begin = std::min(global_count, static_cast<std::size_t>(r) * each);
    const std::size_t end = std::min(global_count, begin + each);
    shards.push_back(Shard{r, begin, end - begin});
  }
  return shards;
}

std::span<const ChoiceName<LossScaling>> choice_names(LossScaling) {
  static constexpr ChoiceName<LossScaling> kNames[] = {
      {LossScaling::kReplicaMean, "replica-mean",
       "Keras' model.fit: a replica's own examples' mean / replicas, so on an uneven last batch "
       "each replica weighs the same"},
      {LossScaling::kBatchMean, "batch-mean",
       "divided by the global batch's examples, so each example weighs the same, as on one "
       "device"},
      {LossScaling::kGlobalBatch, "global-batch",
       "TensorFlow's custom-loop tutorial, compute_average_loss(loss, global_batch_size=GB): "
       "divided by the batch size the data was batched with, so a short batch moves less"},
      {LossScaling::kShardMean, "shard-mean",
       "the custom-loop mistake: a replica's own mean only, so the summed gradients are N times "
       "too large"},
  };
  return kNames;
}

LossScaling parse_loss_scaling(std::string_view name) {
  return parse_choice<LossScaling>(name, "loss scaling");
}

const char* to_string(LossScaling scaling) { return choice_name(scaling); }

float loss_scale(LossScaling scaling, std::size_t shard, int replicas, std::size_t global,
                 std::size_t nominal) {
  // A full batch gives the same scale every way but shard-mean's: shard x replicas = global
  // batch = nominal.
  const std::size_t divisor =
      scaling == LossScaling::kReplicaMean ? shard * static_cast<std::size_t>(std::max(replicas, 1))
      : scaling == LossScaling::kShardMean ? shard
      : scaling == LossScaling::kGlobalBatch ? (nominal > 0 ? nominal : global)
                                             : global;
  return 1.0f / static_cast<float>(std::max<std::size_t>(1, divisor));
}

DivergedError::DivergedError(NonFiniteValue where)
    : std::runtime_error([&] {
        const char* kind = std::isnan(where.value) ? "NaN"
                           : where.value > 0       ? "infinite"
                                                   : "minus infinite";
        const std::string what = where.in_loss() ? "the loss" : "a gradient of " + where.layer;
        const std::string element =
            where.tensor.empty() ? ""
                                 : where.tensor + ", element " + std::to_string(where.index) + "; ";
        return "training diverged in step " + std::to_string(where.step) + ": " + what + " on " +
               where.device + " (replica " + std::to_string(where.replica) + ") is " + kind + " (" +
               element + "found before the all-reduce: the weights are those after step " +
               std::to_string(where.step - 1) + ")";
      }()),
      where_(std::move(where)) {}

std::unique_ptr<Model> make_model(const StrategyOptions& options, vgpu::MemoryArena& arena,
                                  Ops& ops) {
  if (options.layers.empty()) return Model::create(options.model, arena, ops);
  return std::make_unique<Model>(make_layers(options.layers), Model::input_shape_of(options.model),
                                 arena, ops);
}

std::string model_name(const StrategyOptions& options) {
  return options.layers.empty() ? std::string(to_string(options.model)) : describe(options.layers);
}

LossStats reduce_sum(const std::vector<LossStats>& per_replica) {
  LossStats total;
  for (const LossStats& s : per_replica) total += s;
  return total;
}

// ---------------------------------------------------------------------------------------------
// Replica

Replica::Replica(int id, vgpu::Device& device, const StrategyOptions& options)
    : id_(id),
      device_(&device),
      own_ops_(device.is_cuda()
                   ? make_cuda_ops(*device.cuda_api(),
                                   options.gpu_model ? *options.gpu_model : runtime_gpu_model_api(),
                                   device.cuda_ordinal(), device.cuda_stream(), device.memory())
                   : nullptr),
      ops_(own_ops_ ? own_ops_.get() : &cpu_ops()),
      model_(make_model(options, device.memory(), *ops_)),
      optimizer_(make_optimizer(options.optimizer, model_->num_params(), device.memory(), *ops_)) {}

const std::uint8_t* Replica::device_labels() const {
  return ops_->host_accessible() ? labels_.data() : device_labels_.as<std::uint8_t>();
}

// The split: examples gathered and converted on the host, then copied to the device (H2D on a
// CUDA device; the host writes straight into a CPU-backed device's memory).
void Replica::load_shard(const Dataset& data, std::span<const std::uint32_t> indices) {
  gather_batch(data, indices, device_->memory(), images_, labels_, *ops_, &host_staging_);
  if (ops_->host_accessible() || labels_.empty()) return;
  if (device_labels_.bytes() < labels_.size()) {
    device_labels_.reset();  // grows to the largest shard, then is reused every step
    device_labels_ = device_->memory().allocate(labels_.size(), "labels");
  }
  ops_->copy_to_device(device_labels_.data(), labels_.data(), labels_.size());
}

void Replica::begin_step() {
  pending_events_.clear();  // left over only when the last step failed
  pending_lane_events_.clear();
  ops_->begin_marks();
}

void Replica::set_slowdown(double factor) {
  if (!(factor >= 1.0 && factor <= kMaxSlowdown)) {
    throw std::invalid_argument(device_->name() + " cannot compute " + std::to_string(factor) +
                                " times slower: a slowdown is a factor from 1 to " +
                                std::to_string(static_cast<int>(kMaxSlowdown)));
  }
  if (factor > 1.0 && ops_->marks_deferred()) {
    throw std::invalid_argument(device_->name() +
                                " is a CUDA GPU: its kernels run at the card's speed, so only a "
                                "CPU-backed virtual GPU can be made slower");
  }
  slowdown_ = factor;
}

void Replica::stretch(Phase phase, const TimeMark& begin) const {
  if (slowdown_ <= 1.0 || phase == Phase::kAllReduce || phase == Phase::kWait ||
      phase == Phase::kBroadcastInit) {
    return;
  }
  // The device is busy (its thread sleeps) for the extra time a slower device would compute.
  const double seconds = vgpu::seconds_between(begin.host, vgpu::Clock::now());
  std::this_thread::sleep_for(std::chrono::duration<double>((slowdown_ - 1.0) * seconds));
}

void Replica::record(const std::vector<StepListener*>& listeners, Phase phase, std::int64_t step,
                     const TimeMark& begin, std::size_t bytes, int pack, Lane lane) {
  stretch(phase, begin);
  if (listeners.empty()) return;
  const TimeMark end = mark(lane);
  if (ops_->marks_deferred()) {
    // The lane's thread keeps its own: the device's thread may be recording at the same time.
    (lane == Lane::kCommunication ? pending_lane_events_ : pending_events_)
        .push_back(PendingEvent{phase, step, begin, end, bytes, pack, lane});
    return;
  }
  const RunEvent event{id_,   phase, step, ops_->time_of(begin), ops_->time_of(end),
                       bytes, pack,  lane};
  for (StepListener* l : listeners) l->on_phase(event);
}

void Replica::flush_events(const std::vector<StepListener*>& listeners) {
  // The lane has ended its work (apply_gradients waited for it): its events join the device's.
  pending_events_.insert(pending_events_.end(), pending_lane_events_.begin(),
                         pending_lane_events_.end());
  pending_lane_events_.clear();
  if (pending_events_.empty()) return;
  // The caller has waited for the device (ops().synchronize()): every mark's time is known.
  for (const PendingEvent& e : pending_events_) {
    const RunEvent event{id_,     e.phase, e.step, ops_->time_of(e.begin), ops_->time_of(e.end),
                         e.bytes, e.pack,  e.lane};
    for (StepListener* l : listeners) l->on_phase(event);
  }
  pending_events_.clear();
}

// ---------------------------------------------------------------------------------------------
// ReplicaContext

int ReplicaContext::num_replicas_in_sync() const { return strategy_->num_replicas_in_sync(); }

int ReplicaContext::replica_id_in_sync_group() const {
  return strategy_->first_replica_id() + replica_->id();
}

void ReplicaContext::record(Phase phase, const TimeMark& begin, std::size_t bytes) {
  replica_->record(strategy_->listeners_, phase, step_, begin, bytes);
}

const Tensor& ReplicaContext::forward() {
  const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kForward);
  const TimeMark begin = replica_->ops().mark();
  const Tensor& logits = model().forward(images());
  record(Phase::kForward, begin);
  strategy_->reached(replica_->id(), StepBoundary::kForward);
  return logits;
}

float ReplicaContext::loss_scale_of_step() const {
  return loss_scale(strategy_->options().loss_scaling, labels().size(), num_replicas_in_sync(),
                    global_batch_size_, nominal_batch_size_);
}

LossStats ReplicaContext::backward(const Tensor& logits) {
  const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kBackward);
  LossStats stats;
  try {
    queue_backward(logits, &stats);
    replica_->ops().wait_loss_stats();
  } catch (...) {
    gradient_checked_ = false;
    replica_->ops().wait_loss_stats();  // it would write into `stats` after this frame is gone
    throw;
  }
  finish_backward(stats);
  return stats;
}

// The loss and backpropagation queued; the caller waits for the read-backs (*stats) before
// `stats` goes, even when this throws.
void ReplicaContext::queue_backward(const Tensor& logits, LossStats* stats) {
  const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kBackward);
  const TimeMark begin = replica_->ops().mark();
  enqueue_softmax_cross_entropy(replica_->ops(), logits, labels(), replica_->device_labels(),
                                loss_scale_of_step(), &replica_->grad_logits(), &model().arena(),
                                stats);
  if (overlapping_) {
    // The loss first (a CPU-backed device has computed it by now; a GPU is waited for): a NaN
    // loss is named as the loss, not as the first gradient it spoils.
    replica_->ops().wait_loss_stats();
    finish_backward(*stats);
    model().backward(replica_->grad_logits(),
                     [this](std::size_t from) { send_written_packs(from); });
  } else {
    model().backward(replica_->grad_logits());
  }
  record(Phase::kBackward, begin);
  strategy_->reached(replica_->id(), StepBoundary::kBackward);
  // On a GPU the search for a NaN gradient is queued behind the backward pass, and its answer
  // comes back with the loss's sums: one wait for both, the step's one read-back before the
  // all-reduce. (Where the host reads the gradients itself, apply_gradients searches them: no
  // wait to share.)
  // Overlapping packs were each searched before their all-reduce (send_written_packs).
  if (!replica_->ops().host_accessible() && !overlapping_) {
    gradient_check_ = model().num_params();
    model().queue_gradient_check(&gradient_check_);
    gradient_checked_ = true;
  }
}

void ReplicaContext::finish_backward(const LossStats& stats) {
  if (!std::isfinite(stats.loss_sum)) diverged("", stats.loss_sum);
}

LossStats ReplicaContext::forward_and_backward() {
  Replica& r = *replica_;
  if (!strategy_->options().cuda_graphs || strategy_->step_listened_ || !r.ops().can_capture() ||
      !r.graphs_off_.empty()) {
    return backward(forward());
  }
  // The graph holds a shard's size and the loss scale among its arguments: another size (the
  // last batch of an epoch) is a step of its own, seen once uncaptured before it is captured.
  Replica::StepGraph& g = r.graph_;
  const std::size_t count = labels().size();
  const float scale = loss_scale_of_step();
  if (!g.seen || g.count != count || g.scale != scale) {
    g = Replica::StepGraph{};
    g.count = count;
    g.scale = scale;
    g.seen = true;
    return backward(forward());
  }
  if (g.captured) {
    // The host's side of the two phases, without their launches: the labels checked, the
    // phases marked where the graph marks them, the read-backs bound to this step.
    check_labels(labels(), g.classes);
    LossStats stats;
    bool launched = false;
    {
      const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kForward);
      launched = r.ops().replay(&stats, &gradient_check_);
    }
    if (launched) {
      for (Replica::PendingEvent e : g.events) {
        e.step = step_;
        r.pending_events_.push_back(e);
      }
      gradient_check_ = model().num_params();  // overwritten by the wait, as in backward()
      gradient_checked_ = true;
      {
        const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kBackward);
        r.ops().wait_loss_stats();
      }
      finish_backward(stats);
      return stats;
    }
    // Memory moved since (an evaluation's larger batch regrew the activations): this step runs
    // uncaptured, sizing whatever it needs, and the next is captured again.
    g.captured = false;
    return backward(forward());
  }
  return captured_forward_and_backward();
}

// The step's forward and backward recorded as a graph and launched once; if CUDA refuses to
// capture them, the replica's steps run uncaptured from then on, saying why.
LossStats ReplicaContext::captured_forward_and_backward() {
  Replica& r = *replica_;
  Ops& ops = r.ops();
  const std::size_t events_before = r.pending_events_.size();
  LossStats stats;
  try {
    ops.begin_capture();
    const Tensor& logits = forward();
    r.graph_.classes = logits.dim(1);
    queue_backward(logits, &stats);
    ops.end_capture();
  } catch (const vgpu::CudaError& e) {
    ops.abort_capture();
    gradient_checked_ = false;
    r.pending_events_.resize(events_before);
    r.graphs_off_ = std::string("CUDA could not capture the step as a graph: ") + e.what();
    return backward(forward());
  } catch (...) {
    ops.abort_capture();
    gradient_checked_ = false;
    throw;
  }
  r.graph_.events.assign(r.pending_events_.begin() + static_cast<std::ptrdiff_t>(events_before),
                         r.pending_events_.end());
  r.graph_.captured = true;
  {
    const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kBackward);
    ops.wait_loss_stats();
  }
  finish_backward(stats);
  return stats;
}

LossStats ReplicaContext::evaluate() {
  const TimeMark begin = replica_->ops().mark();
  const Tensor& logits = model().forward(images());
  LossStats stats;
  enqueue_softmax_cross_entropy(replica_->ops(), logits, labels(), replica_->device_labels(), 0.0f,
                                nullptr, nullptr, &stats);
  replica_->ops().wait_loss_stats();
  record(Phase::kEvaluate, begin);
  return stats;
}

std::vector<float> ReplicaContext::predict(int* classes) {
  const TimeMark begin = replica_->ops().mark();
  const Tensor& logits = model().forward(images());
  std::vector<float> rows(logits.size());
  replica_->ops().copy_to_host(rows.data(), logits.data(), rows.size() * sizeof(float));
  *classes = logits.dim(1);
  record(Phase::kEvaluate, begin);
  return rows;
}

void ReplicaContext::all_reduce_sum(std::span<float> values) {
  all_reduce_range(*strategy_, *replica_, step_, values, {});
}

vgpu::PackFrame ReplicaContext::pack_frame(std::size_t pack) const {
  const std::vector<GradientPack>& packs = strategy_->packs();
  vgpu::PackFrame frame;
  frame.offset = packs[pack].begin;
  frame.whole = replica_->model().num_params();
  frame.index = static_cast<int>(pack);
  frame.packs = static_cast<int>(packs.size());
  frame.steps_before =
      frame.index * strategy_->all_reduce().num_steps(strategy_->num_local_replicas());
  return frame;
}

void ReplicaContext::all_reduce_gradients() {
  const std::span<float> grads = model().grads();
  const std::vector<GradientPack>& packs = strategy_->packs();
  if (packs.size() <= 1) {
    all_reduce_sum(grads);
    return;
  }
  for (std::size_t i = 0; i < packs.size(); ++i) {
    all_reduce_range(*strategy_, *replica_, step_,
                     grads.subspan(packs[i].begin, packs[i].end - packs[i].begin), pack_frame(i));
  }
}

void ReplicaContext::overlap_packs_with_backward() {
  overlapping_ = replica_->communication_lane() != nullptr && !strategy_->step_listened_;
  packs_sent_ = 0;
}

void ReplicaContext::send_written_packs(std::size_t from) {
  const std::vector<GradientPack>& packs = strategy_->packs();
  while (packs_sent_ < packs.size() && packs[packs_sent_].begin >= from) {
    const GradientPack& pack = packs[packs_sent_];
    // Before its all-reduce, as for one pack: a NaN is named where it appears, and the throw
    // aborts the other replicas' all-reduces, so no replica updates its weights in this step.
    // (On a GPU the search is a host wait for backward so far: the all-reduce must not sum a
    // pack before its own gradients are known to be finite.)
    if (const auto bad = model().first_nonfinite_gradient(pack.begin, pack.end)) {
      diverged(bad->layer, bad->value, bad->tensor, bad->index);
    }
    vgpu::PackFrame frame = pack_frame(packs_sent_);
    if (!replica_->ops().host_accessible()) {
      // On a GPU: the communication stream waits there for the pack's gradients, and the lane
      // queues its all-reduce on that stream, while this thread queues the rest of backward.
      replica_->ops().communication_waits_for_compute();
      frame.communication_stream = true;
    }
    // The task holds no reference to this context: a failing step may end it first.
    replica_->communication_lane()->enqueue(
        [strategy = strategy_, replica = replica_, step = step_,
         values = model().grads().subspan(pack.begin, pack.end - pack.begin), frame] {
          all_reduce_range(*strategy, *replica, step, values, frame, Lane::kCommunication);
        });
    ++packs_sent_;
  }
}

void ReplicaContext::all_reduce_range(MirroredStrategy& strategy, Replica& replica,
                                      std::int64_t step, std::span<float> values,
                                      const vgpu::PackFrame& frame, Lane lane) {
  const int pack = frame.packs > 1 ? frame.index : -1;
  const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kAllReduce);
  const TimeMark arrived = replica.mark(lane);
  TimeMark begin = arrived;
  // The group moves the data as the devices' memory requires: host loops on CPU-backed devices,
  // device copies and kernels (or NCCL) on CUDA devices, where the values stay on the GPU. Until
  // the last replica arrives, this one waits: its own phase, so a straggler shows.
  strategy.rendezvous_.all_reduce(
      replica.id(), values, vgpu::ReduceOp::kSum,
      [&] {
        // The wait's end is marked first, then the all-reduce's begin: on a CUDA stream the marks
        // are events in that order, so the wait never ends after the all-reduce began.
        replica.record(strategy.listeners_, Phase::kWait, step, arrived, 0, pack, lane);
        begin = replica.mark(lane);
      },
      frame);
  replica.record(strategy.listeners_, Phase::kAllReduce, step, begin, values.size_bytes(), pack,
                 lane);
}

void ReplicaContext::diverged(const std::string& layer, double value, const std::string& tensor,
                              std::size_t index) const {
  NonFiniteValue where;
  where.tensor = tensor;
  where.index = index;
  where.step = step_ + 1;
  where.replica = replica_->id();
  where.device = replica_->device().name();
  where.layer = layer;
  where.value = value;
  throw DivergedError(std::move(where));
}

void ReplicaContext::apply_gradients() {
  // Before the all-reduce, on every replica: a NaN is named where it appears (the sum would
  // carry it to every replica and into every weight). The throw aborts the other replicas'
  // all-reduce, so no replica updates its weights in this step.
  // On a GPU the search backward() queued covers the gradients as backward and the step's
  // listeners left them (the host cannot write device memory in between); where the host can
  // (a CPU-backed device: a custom step may set a gradient by hand), it searches here.
  const bool overlapped = overlapping_;
  if (overlapping_) {
    // Every pack went to its all-reduce as backward wrote it (checked then): wait for them all.
    send_written_packs(0);
    overlapping_ = false;
    replica_->communication_lane()->synchronize();
  } else {
    const auto bad = gradient_checked_ ? model().nonfinite_gradient_at(gradient_check_)
                                       : model().first_nonfinite_gradient();
    gradient_checked_ = false;
    if (bad) diverged(bad->layer, bad->value, bad->tensor, bad->index);
    all_reduce_gradients();
  }
  const vgpu::WorkPhaseScope counted(vgpu::WorkPhase::kUpdate);
  // On a GPU the lane has queued the packs' all-reduces on the communication stream: the update
  // waits there for their sums.
  if (overlapped) replica_->ops().compute_waits_for_communication();
  const TimeMark begin = replica_->ops().mark();
  replica_->optimizer().apply(model().params(), model().grads());
  record(Phase::kUpdate, begin);
}

// ---------------------------------------------------------------------------------------------
// MirroredStrategy

MirroredStrategy::MirroredStrategy(std::vector<vgpu::Device*> devices, StrategyOptions options,
                                   EventStore* events, vgpu::WorkerGroup* workers)
    : devices_(std::move(devices)),
      options_(std::move(options)),
      workers_(workers != nullptr && workers->size() > 1 ? workers : nullptr),
      rendezvous_(static_cast<int>(devices_.size())) {
  if (devices_.empty()) throw std::invalid_argument("MirroredStrategy needs at least one device");
  if (events != nullptr) listeners_.push_back(events);
  if (workers_ != nullptr) check_workers_agree();
  // Before any step: a device thread whose first sgemm cannot map OpenBLAS's buffer would hang.
  check_blas_work_memory(static_cast<int>(std::count_if(
      devices_.begin(), devices_.end(), [](const vgpu::Device* d) { return !d->is_cuda(); })));
  choose_all_reduce();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    replicas_.push_back(std::make_unique<Replica>(static_cast<int>(i), *devices_[i], options_));
  }
  packs_ = make_gradient_packs(replicas_[0]->model().weight_tensors(), options_.packs);
  // One replica in sync has nothing to all-reduce, and nothing to overlap.
  if (packs_.size() > 1 && options_.packs.overlap && num_replicas_in_sync() > 1) {
    for (auto& r : replicas_) {
      if (!r->ops().host_accessible()) {
        // Several workers' all-reduce crosses between them on the devices' own streams.
        if (workers_ != nullptr) continue;
        r->ops().attach_communication_stream(r->device().communication_cuda_stream());
        r->graphs_off_ =
            "not captured while packs overlap backward: the host starts each pack's all-reduce "
            "as backward writes it (packs after backward keep the graph)";
      }
      r->comm_ = std::make_unique<vgpu::Stream>(r->device().name() + "/communication");
    }
  }
  broadcast_initial_variables();
}

MirroredStrategy::~MirroredStrategy() {
  // Nothing may still run on a device thread that touches a replica about to be destroyed.
  for (vgpu::Device* d : devices_) {
    try {
      d->stream().synchronize();
    } catch (...) {
    }
  }
}

int MirroredStrategy::all_reduce_steps() const {
  return static_cast<int>(packs_.size()) * all_reduce_->num_steps(num_local_replicas());
}

std::string MirroredStrategy::device_tuple() const {
  return vgpu::tensorflow_device_tuple(vgpu::placements_of(devices_));
}

std::string MirroredStrategy::tensorflow_all_reduce_log() const {
  // num_packs is NcclAllReduce's option, whose log line is another (train_report.cpp says it).
  if (options_.packs.num_packs > 0) return "";
  return all_reduce_row_->tensorflow_log(vgpu::placements_of(devices_),
                                         replicas_[0]->model().num_weight_tensors(),
                                         static_cast<int>(packs_.size()));
}

void MirroredStrategy::choose_all_reduce() {
  // A pure function of the devices and the NCCL there is (tested without a GPU).
  const vgpu::AllReduceChoice choice = vgpu::choose_all_reduce(
      options_.all_reduce, vgpu::placements_of(devices_), vgpu::nccl_runtime());
  all_reduce_ = choice.row->make(devices_, 0, choice.nccl_multi_rank);  // checked once, above
  all_reduce_notes_ = choice.notes;
  all_reduce_row_ = choice.row;
  if (workers_ != nullptr) {
    all_reduce_ = std::make_unique<vgpu::HierarchicalAllReduce>(std::move(all_reduce_), *workers_);
    // How it runs within a worker, and across. Not auto's reasons: they say what TensorFlow's
    // MirroredStrategy chooses in one process, which is not checked for several workers.
    all_reduce_notes_.resize(1);
    all_reduce_notes_.push_back("Across " + std::to_string(num_workers()) +
                                " workers: " + workers_->transport() +
                                " of each worker's sum (in " + devices_[0]->name() +
                                "), then copied to its other devices: within, across, back");
  }
}

void MirroredStrategy::broadcast_initial_variables() {
  Model& primary = replicas_[0]->model();
  primary.init(options_.seed);
  if (workers_ != nullptr) broadcast_from_worker_0();  // every worker starts from worker 0's
  // Every replica copies from host memory: replica 0's own parameters on a CPU-backed device,
  // else one host copy of them (a CUDA replica 0, or CUDA targets, whatever the mix).
  std::vector<float> host_copy;
  std::span<const float> source = primary.params();
  if (!replicas_[0]->ops().host_accessible()) {
    host_copy = primary.params_to_host();
    source = host_copy;
  }
  for (std::size_t i = 1; i < replicas_.size(); ++i) {
    Replica* replica = replicas_[i].get();
    replica->device().stream().enqueue([this, replica, source] {
      Ops& ops = replica->ops();
      replica->begin_step();
      const TimeMark begin = ops.mark();
      ops.copy_to_device(replica->model().params().data(), source.data(), source.size_bytes());
      replica->record(listeners_, Phase::kBroadcastInit, 0, begin, source.size_bytes());
      ops.synchronize();
      replica->flush_events(listeners_);
    });
  }
  for (vgpu::Device* d : devices_) d->stream().synchronize();
}

std::vector<LossStats> MirroredStrategy::run(const GlobalBatch& batch, const StepFunction& fn) {
  return run_training(batch, fn, false);
}

std::vector<LossStats> MirroredStrategy::run_training(const GlobalBatch& batch,
                                                      const StepFunction& fn,
                                                      bool packs_may_overlap) {
  std::vector<LossStats> results = run_on_replicas(batch, fn, /*training=*/true, packs_may_overlap);
  ++step_;
  if (options_.check_sync && num_replicas_in_sync() > 1) check_in_sync();
  return results;
}

LossStats MirroredStrategy::train_step(const GlobalBatch& batch) {
  const auto step = [](ReplicaContext& ctx) {
    ctx.overlap_packs_with_backward();
    LossStats stats = ctx.forward_and_backward();
    ctx.apply_gradients();
    return stats;
  };
  return sum_over_workers(reduce_sum(run_training(batch, step, /*packs_may_overlap=*/true)));
}

LossStats MirroredStrategy::evaluate(const Dataset& data, std::size_t batch_per_replica) {
  return *evaluate(data, batch_per_replica, {});
}

bool MirroredStrategy::for_each_global_batch(
    const Dataset& data, std::size_t global, std::size_t batch_per_replica,
    const std::function<bool(std::size_t, const GlobalBatch&)>& each) {
  std::vector<std::uint32_t> indices(data.size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::uint32_t>(i);
  for (std::size_t begin = 0; begin < indices.size(); begin += global) {
    const std::size_t count = std::min(global, indices.size() - begin);
    if (!each(begin,
              GlobalBatch{&data, std::span(indices).subspan(begin, count), batch_per_replica})) {
      return false;
    }
  }
  return true;
}

std::optional<LossStats> MirroredStrategy::evaluate(const Dataset& data,
                                                    std::size_t batch_per_replica,
                                                    const std::function<bool()>& stop) {
  tell_workers("the evaluation");
  const std::size_t global = batch_per_replica * static_cast<std::size_t>(num_replicas_in_sync());
  LossStats total;
  const bool whole = for_each_global_batch(
      data, global, batch_per_replica, [&](std::size_t begin, const GlobalBatch& b) {
        if (begin > 0 && stop && stop()) return false;
        total += reduce_sum(run_on_replicas(
            b, [](ReplicaContext& ctx) { return ctx.evaluate(); }, /*training=*/false));
        return true;
      });
  if (!whole) return std::nullopt;
  return sum_over_workers(total);
}

std::vector<float> MirroredStrategy::predict(const Dataset& data, std::size_t global_batch) {
  const auto n = static_cast<std::size_t>(num_replicas_in_sync());
  const std::size_t batch_per_replica = (global_batch + n - 1) / n;
  std::vector<float> logits;
  std::vector<std::vector<float>> rows(replicas_.size());
  std::vector<int> classes(replicas_.size(), 0);
  for_each_global_batch(
      data, global_batch, batch_per_replica, [&](std::size_t begin, const GlobalBatch& b) {
        run_on_replicas(
            b,
            [&](ReplicaContext& ctx) {
              const auto r = static_cast<std::size_t>(ctx.replica().id());
              rows[r] = ctx.predict(&classes[r]);
              return LossStats{};
            },
            /*training=*/false);
        const auto width = static_cast<std::size_t>(classes[0]);
        logits.resize(data.size() * width);  // 0 where another worker's shards are
        const std::vector<Shard> shards = local_shards(b.size(), batch_per_replica);
        for (std::size_t r = 0; r < shards.size(); ++r) {
          std::copy(
              rows[r].begin(), rows[r].end(),
              logits.begin() + static_cast<std::ptrdiff_t>((begin + shards[r].begin) * width));
        }
        return true;
      });
  return logits;
}

std::vector<Shard> MirroredStrategy::local_shards(std::size_t batch_size,
                                                  std::size_t per_replica) const {
  const std::vector<Shard> all =
      split_global_batch(batch_size, num_replicas_in_sync(), per_replica);
  std::vector<Shard> mine(all.begin() + first_replica_id(),
                          all.begin() + first_replica_id() + num_local_replicas());
  for (Shard& s : mine) s.replica -= first_replica_id();  // this worker's replica index
  return mine;
}

void MirroredStrategy::check_in_sync() {
  if (workers_ != nullptr) check_workers_in_sync();
  const std::uint64_t expected = replicas_[0]->last_fingerprint();
  std::string differing;
  for (const auto& r : replicas_) {
    if (r->last_fingerprint() != expected) {
      char text[96];
      std::snprintf(text, sizeof text, " %s (fingerprint %016llx)", r->device().name().c_str(),
                    static_cast<unsigned long long>(r->last_fingerprint()));
      differing += text;
    }
  }
  if (!differing.empty()) {
    char text[64];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(expected));
    throw ReplicasOutOfSync("replicas out of sync after step " + std::to_string(step_) +
                            ": weights of" + differing + " differ from " + devices_[0]->name() +
                            " (fingerprint " + text +
                            "). Mirrored replicas must apply identical updates: the all-reduce "
                            "or the update is broken.");
  }
}

void MirroredStrategy::add_listener(StepListener* listener, bool before_others) {
  if (listener != nullptr &&
      std::find(listeners_.begin(), listeners_.end(), listener) == listeners_.end()) {
    listeners_.insert(before_others ? listeners_.begin() : listeners_.end(), listener);
  }
}

void MirroredStrategy::remove_listener(StepListener* listener) {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
}

std::vector<LossStats> MirroredStrategy::run_on_replicas(const GlobalBatch& batch,
                                                         const StepFunction& fn, bool training,
                                                         bool packs_may_overlap) {
  const int n = num_local_replicas();
  const int in_sync = num_replicas_in_sync();
  const std::size_t per_replica = batch.batch_per_replica > 0
                                      ? batch.batch_per_replica
                                      : (batch.size() + in_sync - 1) / in_sync;
  // The global batch size the data was batched with: global-batch loss scaling divides by it.
  const std::size_t nominal = per_replica * static_cast<std::size_t>(in_sync);
  std::vector<LossStats> results(static_cast<std::size_t>(n));
  const std::vector<Shard> shards = local_shards(batch.size(), per_replica);
  if (training) tell_workers("training step " + std::to_string(step_ + 1));
  // What the listeners need of a training step (evaluation tells them only its timed phases). A
  // stopped controller throws StepStopped here, before anything runs.
  StepNeeds needs;
  if (training) {
    StepStart start{step_, &batch, &shards, {}, all_reduce_->name(), all_reduce_steps()};
    start.packs = static_cast<int>(packs_.size());
    for (const auto& r : replicas_) {
      start.replicas.push_back(r.get());
      start.packs_may_overlap |= packs_may_overlap && r->communication_lane() != nullptr;
    }
    for (StepListener* l : listeners_) needs |= l->begin_step(start);
    if (!start.packs_may_overlap) needs.boundaries |= needs.boundaries_unless_overlap;
  }
  step_listened_ = needs.boundaries;
  step_meets_ = needs.meetings;
  // Fresh each step: one a failed replica aborted stays aborted.
  meeting_ = step_meets_ ? std::make_shared<vgpu::CancellableBarrier>(n) : nullptr;
  if (step_listened_) {
    passed_.assign(static_cast<std::size_t>(n), 0);
    if (!arrivals_) arrivals_ = std::make_unique<std::atomic<int>[]>(kMaxBoundaries);
    for (int i = 0; i < kMaxBoundaries; ++i) arrivals_[i].store(0, std::memory_order_relaxed);
  }
  rendezvous_.reset(all_reduce_.get(), step_listened_ ? &hook_observer_ : nullptr, devices_);
  const bool fingerprint = training && ((options_.check_sync && in_sync > 1) || needs.fingerprints);
  for (int r = 0; r < n; ++r) {
    Replica* replica = replicas_[static_cast<std::size_t>(r)].get();
    const Shard shard = shards[static_cast<std::size_t>(r)];
    replica->device().stream().enqueue(
        [this, replica, shard, &batch, &fn, &results, fingerprint, training, nominal] {
          try {
            Ops& ops = replica->ops();
            // What the GPU is asked is counted by phase in a training step; an evaluation's all as
            // "other".
            const auto phase = [training](vgpu::WorkPhase p) {
              return training ? p : vgpu::WorkPhase::kOther;
            };
            {
              const vgpu::WorkPhaseScope counted(phase(vgpu::WorkPhase::kSplit));
              replica->begin_step();
              const TimeMark begin = ops.mark();
              replica->load_shard(*batch.data, batch.indices.subspan(shard.begin, shard.count));
              replica->record(listeners_, Phase::kSplit, step_, begin,
                              replica->images().size() * sizeof(float));
            }
            reached(replica->id(), StepBoundary::kSplit);
            ReplicaContext ctx(*this, *replica, batch.size(), nominal, step_);
            results[static_cast<std::size_t>(replica->id())] = fn(ctx);
            rendezvous_.depart(replica->id());
            const vgpu::WorkPhaseScope counted(phase(vgpu::WorkPhase::kStepEnd));
            // The step is done when its device work is: the next step's host-side gather may not
            // overwrite what this one still copies, and check_in_sync reads settled weights. The
            // one wait also makes the step's marks readable.
            const float* params = fingerprint ? replica->model().queue_params_read_back() : nullptr;
            ops.synchronize();
            if (fingerprint) replica->fingerprint_ = replica->model().fingerprint_of(params);
            replica->flush_events(listeners_);
            reached(replica->id(), StepBoundary::kUpdate);
          } catch (...) {
            rendezvous_.abort();
            if (meeting_) meeting_->abort();
            // Its packs' all-reduces, released by the abort, end before the next step starts
            // (on a GPU: the next step's work waits for what the lane queued).
            if (vgpu::Stream* lane = replica->communication_lane()) {
              try {
                lane->synchronize();
              } catch (...) {
              }
              try {
                replica->ops().compute_waits_for_communication();
              } catch (...) {
              }
            }
            for (StepListener* l : listeners_) l->abort_step();
            throw;
          }
        });
  }
  // Wait for every replica; report the first real failure, not the aborts it caused.
  try {
    vgpu::synchronize_all(devices_);
  } catch (...) {
    if (training) {
      for (StepListener* l : listeners_) l->end_step(/*completed=*/false);
    }
    step_listened_ = step_meets_ = false;
    throw;
  }
  if (training) {
    for (StepListener* l : listeners_) l->end_step(/*completed=*/true);
  }
  step_listened_ = step_meets_ = false;
  return results;
}

void MirroredStrategy::reached(int rank, StepBoundary boundary) {
  if (!step_listened_) return;  // no listener needs the boundaries: nothing at all
  Replica& replica = *replicas_[static_cast<std::size_t>(rank)];
  for (StepListener* l : listeners_) l->on_replica_reached(replica, boundary);
  const PausePoint point = pause_point(boundary);
  if (step_meets_) {
    meeting_->arrive_and_wait([&] { all_replicas_reached(point); });
    return;
  }
  // The k-th boundary of every replica is the same moment of the step: the last replica to
  // reach it tells the listeners (the others have gone on).
  const int ordinal = passed_[static_cast<std::size_t>(rank)]++;
  if (ordinal < kMaxBoundaries &&
      arrivals_[ordinal].fetch_add(1, std::memory_order_acq_rel) + 1 == num_local_replicas()) {
    all_replicas_reached(point);
  }
}

PausePoint MirroredStrategy::pause_point(StepBoundary boundary) const {
  PausePoint point;
  point.step = step_;
  point.boundary = boundary;
  point.pausing = step_meets_;
  return point;
}

void MirroredStrategy::all_replicas_reached(PausePoint point) {
  point.time = vgpu::Clock::now();
  for (StepListener* l : listeners_) l->on_all_reached(point);
  if (!point.pausing) return;
  for (StepListener* l : listeners_) l->hold(point);
}

void MirroredStrategy::HookObserver::on_rank_step(int rank, int index, std::string_view phase) {
  MirroredStrategy& s = *strategy_;
  Replica& replica = *s.replicas_[static_cast<std::size_t>(rank)];
  for (StepListener* l : s.listeners_) l->on_collective_rank_step(replica, index, phase);
}

void MirroredStrategy::HookObserver::on_step(const vgpu::CollectiveStep& step) {
  MirroredStrategy& s = *strategy_;
  for (StepListener* l : s.listeners_) l->on_collective_step(step);
  PausePoint point = s.pause_point(StepBoundary::kAllReduceStep);
  point.all_reduce_step = step.index;
  point.all_reduce_steps = s.all_reduce_steps();
  point.all_reduce_phase = step.phase;
  s.all_replicas_reached(std::move(point));  // every rank waits in the collective's barrier
}

}  // namespace mirrorlab::core
