// MirroredStrategy: synchronous data parallelism over N devices, as in TensorFlow.
//
//  1. every replica holds a full copy of the model: variables initialised once on replica 0,
//     then broadcast, so all copies start equal;
//  2. each global batch is split into N shards as TensorFlow rebatches it: each replica takes
//     the next ceil(b / N) of the batch's b examples, so a full batch gives each its
//     per-replica batch, and an uneven last batch of 40 on 3 replicas gives 14, 14 and 12 (on
//     8 replicas, 10 give 2, 2, 2, 2, 2, 0, 0, 0);
//  3. every replica runs forward and backward on its shard, concurrently on its device's stream;
//  4. an all-reduce sums the gradients so every replica holds the same sum;
//  5. every replica applies the same optimizer update to its own copy;
//  6. the step ends when all replicas are done; then their weight fingerprints must be equal.
// The loss is averaged over the global batch, so N replicas compute what one device would.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/dataset.h"
#include "core/nn/loss.h"
#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/strategy/cross_replica.h"
#include "core/strategy/divergence.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/gradient_packs.h"
#include "core/strategy/step_boundary.h"
#include "core/strategy/step_listener.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/devices/barrier.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/stream.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::core {

class GpuModelApi;  // core/nn/cuda/gpu_model_api.h

// One replica's slice of a global batch: examples [begin, begin + count). Throws
// std::invalid_argument when the batch is larger than the replicas' per-replica batches hold.
struct Shard {
  int replica = 0;
  std::size_t begin = 0;
  std::size_t count = 0;
};
std::vector<Shard> split_global_batch(std::size_t global_count, int num_replicas,
                                      std::size_t per_replica_batch);

// Raised when replicas' weights differ after a step: mirrored training is broken.
class ReplicasOutOfSync : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How each replica scales its summed loss before backpropagation (the gradients are then
// summed across replicas). The two agree on every full batch and differ on an uneven one.
enum class LossScaling {
  // Its own examples' mean, divided by the number of replicas: what Keras' model.fit and
  // tf.nn.compute_average_loss without global_batch_size do (TensorFlow 2.21, measured). On an
  // uneven batch a replica with fewer examples weighs as much as one with more, and a replica
  // with none adds nothing.
  kReplicaMean,
  // Divided by the examples in the whole global batch: every example weighs the same, as on
  // one device (compute_average_loss with global_batch_size set to the batch's real size).
  kBatchMean,
  // The mistake, kept to be watched: its own examples' mean and nothing more, what a custom loop
  // with tf.reduce_mean and no division by num_replicas_in_sync computes. The all-reduce sums
  // the replicas' gradients, so they come out N times too large (TensorFlow 2.21, measured: one
  // SGD step on 2 replicas moves a weight twice as far as one device does).
  kShardMean,
  // Divided by the global batch size the data was batched with (per replica x replicas), what
  // TensorFlow's custom-loop tutorial computes with compute_average_loss(global_batch_size=GB):
  // on a short batch every example still weighs 1/GB (TensorFlow 2.21, measured: 1/48 each on
  // a 14/14/12 batch of 3 x 16).
  kGlobalBatch,
};
std::span<const ChoiceName<LossScaling>> choice_names(LossScaling);  // core/io/choice_names.h
// "replica-mean" | "batch-mean" | "global-batch" | "shard-mean"
LossScaling parse_loss_scaling(std::string_view name);
const char* to_string(LossScaling scaling);
// What a replica with `shard` of the global batch's `global` examples multiplies its summed loss
// by, on `replicas` replicas; `nominal` is the global batch size the data was batched with
// (per replica x replicas), global-batch's divisor (0: `global`). A replica with no examples: 1
// (it has nothing to scale).
float loss_scale(LossScaling scaling, std::size_t shard, int replicas, std::size_t global,
                 std::size_t nominal = 0);

struct StrategyOptions {
  ModelKind model = ModelKind::kCnn;
  // A model of the user's (keras.Sequential in the Python module): these layers on 28x28x1
  // images instead of `model`'s. Empty: `model`'s.
  std::vector<LayerSpec> layers;
  OptimizerConfig optimizer;
  std::string all_reduce{vgpu::kAutoAllReduce};  // auto, or a name of the table of algorithms
  std::uint64_t seed = 1;
  bool check_sync = true;  // compare weight fingerprints after every training step
  LossScaling loss_scaling = LossScaling::kReplicaMean;  // as model.fit
  // The gradients all-reduced in packs, last layer first (core/strategy/gradient_packs.h); the
  // default is one pack, TensorFlow's default. The weights are the same bit for bit either way.
  PackOptions packs;
  // On CUDA devices, a training step's forward and backward (the loss and the NaN search with
  // them) captured once as a CUDA graph per replica and launched as one call in the steps after,
  // while the batch's shape stays and no listener stops the step at its boundaries (the GUI's
  // stepping, faults): the same work on the same memory, without a launch from the host for
  // each kernel. The weights are the same bit for bit either way.
  bool cuda_graphs = true;
  // Where CUDA devices' cuBLAS and kernels come from: null for the process's
  // (runtime_gpu_model_api()); a test's fake (tests/support/cuda/fake_gpu_model_api.h).
  GpuModelApi* gpu_model = nullptr;
};

// The model `options` asks for, made in `arena` with `ops` and not yet initialised.
std::unique_ptr<Model> make_model(const StrategyOptions& options, vgpu::MemoryArena& arena,
                                  Ops& ops = cpu_ops());
// What the model is, for a message or a comparison between workers: "cnn", or the layers.
std::string model_name(const StrategyOptions& options);

// The examples `indices` of `data` form one global batch. `batch_per_replica` is the size the
// dataset was batched with per replica (0: size() / N rounded up), the most a replica can take;
// split_global_batch cuts the batch as TensorFlow does.
struct GlobalBatch {
  const Dataset* data = nullptr;
  std::span<const std::uint32_t> indices;
  std::size_t batch_per_replica = 0;
  std::size_t size() const { return indices.size(); }
};

// One copy of the model on one device, with its own optimizer and its current shard.
class Replica {
 public:
  Replica(int id, vgpu::Device& device, const StrategyOptions& options);

  int id() const { return id_; }
  vgpu::Device& device() { return *device_; }
  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }
  // The kernels of its device: CpuOps on a CPU-backed virtual GPU, CudaOps on a CUDA device.
  Ops& ops() { return *ops_; }
  Tensor& grad_logits() { return grad_logits_; }
  const Tensor& images() const { return images_; }  // [shard, 28, 28, 1], in [0, 1], on device
  std::span<const std::uint8_t> labels() const { return labels_; }  // host copy
  const std::uint8_t* device_labels() const;  // the same labels in the device's memory
  std::uint64_t last_fingerprint() const { return fingerprint_; }
  // A straggler (a fault to watch): every phase this replica computes takes `factor` times as
  // long (1: its own speed). Host thread, between steps. Throws std::invalid_argument for a
  // factor outside [1, kMaxSlowdown] or a CUDA device (its kernels cannot be slowed).
  void set_slowdown(double factor);
  double slowdown() const { return slowdown_; }
  static constexpr double kMaxSlowdown = 1000;
  // Whether its training step runs as a captured CUDA graph now; and, where it does not (CUDA
  // refused to capture it, or its packs overlap backward), why (the step then runs uncaptured).
  bool step_captured() const { return graph_.captured; }
  const std::string& graphs_off() const { return graphs_off_; }
  // Where its packs' all-reduces run while backward goes on (PackOptions::overlap): a thread of
  // its own beside the device's thread, as NCCL runs on a stream of its own. On a CUDA device
  // that thread queues the all-reduces on the device's communication stream, which waits for
  // each pack's gradients on the GPU. Null where packs do not overlap (one pack, overlap off, one
  // replica in sync, CUDA devices of several workers: there the packs follow backward).
  vgpu::Stream* communication_lane() { return comm_.get(); }

 private:
  friend class MirroredStrategy;
  friend class ReplicaContext;
  void load_shard(const Dataset& data, std::span<const std::uint32_t> indices);
  void begin_step();                                       // before the first mark of a step
  void stretch(Phase phase, const TimeMark& begin) const;  // the straggler's extra time
  // A phase from `begin` to now, to every listener's on_phase. Told at once where the device's
  // clock is the host's; on CUDA kept until flush_events(), when the step's work has completed.
  void record(const std::vector<StepListener*>& listeners, Phase phase, std::int64_t step,
              const TimeMark& begin, std::size_t bytes = 0, int pack = -1,
              Lane lane = Lane::kCompute);
  // A mark on the device's stream, or on its communication stream for the lane's phases.
  TimeMark mark(Lane lane) {
    return lane == Lane::kCommunication ? ops_->mark_communication() : ops_->mark();
  }
  // Tells the kept phases; call it once ops().synchronize() has waited for the step's work.
  void flush_events(const std::vector<StepListener*>& listeners);

  struct PendingEvent {
    Phase phase;
    std::int64_t step;
    TimeMark begin, end;
    std::size_t bytes;
    int pack = -1;
    Lane lane = Lane::kCompute;
  };

  int id_;
  vgpu::Device* device_;
  std::unique_ptr<Ops> own_ops_;  // CudaOps; null on a CPU-backed device (shared cpu_ops())
  Ops* ops_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  Tensor images_;
  // The loss's gradient, kept from step to step: made anew each step, its block would be a
  // cudaMalloc and a cudaFree (which waits for the whole GPU) in every step.
  Tensor grad_logits_;
  std::vector<std::uint8_t> labels_;
  vgpu::Allocation device_labels_;   // on devices the host cannot read
  std::vector<float> host_staging_;  // pixels on their way to such a device
  std::vector<PendingEvent> pending_events_;
  std::vector<PendingEvent> pending_lane_events_;  // the communication lane's, from its thread
  // The forward and backward captured as a graph (StrategyOptions::cuda_graphs): for the shard
  // size and loss scale it was captured at, seen uncaptured once first (the warm-up that sizes
  // every buffer), and the phases it marks.
  struct StepGraph {
    std::size_t count = 0;
    float scale = 0;
    int classes = 0;  // the logits' columns, for the labels' check
    bool seen = false, captured = false;
    std::vector<PendingEvent> events;  // forward and backward, as the capture marked them
  };
  StepGraph graph_;
  std::string graphs_off_;  // why this replica's step is not captured; empty: it is
  std::uint64_t fingerprint_ = 0;
  double slowdown_ = 1.0;
  std::unique_ptr<vgpu::Stream> comm_;
};

class MirroredStrategy;

// What a step function sees on its replica (TensorFlow's ReplicaContext). Each building block
// records its phase as a run event.
class ReplicaContext {
 public:
  // Among every replica of every worker: worker w's replica i is w x (replicas per worker) + i.
  int replica_id_in_sync_group() const;
  int num_replicas_in_sync() const;
  std::size_t global_batch_size() const { return global_batch_size_; }
  std::int64_t step() const { return step_; }
  Replica& replica() { return *replica_; }
  Model& model() { return replica_->model(); }
  const Tensor& images() const { return replica_->images(); }
  std::span<const std::uint8_t> labels() const { return replica_->labels(); }

  const Tensor& forward();  // logits of this replica's shard
  // The loss, scaled as StrategyOptions::loss_scaling says, and backpropagation into the
  // model's gradients. The stats are this shard's sums.
  LossStats backward(const Tensor& logits);
  // forward() then backward(): on a CUDA device, as one graph launched (StrategyOptions::
  // cuda_graphs) once the step has been seen and captured at this shard size.
  LossStats forward_and_backward();
  // Forward and loss only (no gradients): for evaluation.
  LossStats evaluate();
  // Forward only: the logits, this shard's examples x the model's classes (*classes), on the
  // host. For prediction.
  std::vector<float> predict(int* classes);
  // Cross-replica sum of `values` (this replica's buffer; every replica must call it with the
  // same length) with the strategy's all-reduce.
  void all_reduce_sum(std::span<float> values);
  // The model's gradients summed across replicas, pack by pack (StrategyOptions::packs).
  void all_reduce_gradients();
  // In the training step about to run here: send each pack to its all-reduce as soon as backward
  // has written it, on the replica's communication lane, and let apply_gradients wait for them
  // (PackOptions::overlap). Does nothing where packs do not overlap, nor in a step that stops at
  // its boundaries for a listener (a fault, the window's stepping: they read the gradients whole).
  void overlap_packs_with_backward();
  // optimizer.apply_gradients in a replica context: all-reduce the gradients, then update.
  // Throws DivergedError, before the all-reduce, when a gradient is NaN or infinite (backward()
  // does the same for the loss).
  void apply_gradients();

 private:
  friend class MirroredStrategy;
  ReplicaContext(MirroredStrategy& strategy, Replica& replica, std::size_t global_batch_size,
                 std::size_t nominal_batch_size, std::int64_t step)
      : strategy_(&strategy),
        replica_(&replica),
        global_batch_size_(global_batch_size),
        nominal_batch_size_(nominal_batch_size),
        step_(step) {}
  void record(Phase phase, const TimeMark& begin, std::size_t bytes = 0);
  // One all-reduce of `values` on `replica`'s thread or its communication lane: the wait for the
  // others and the all-reduce, recorded as phases of `step`.
  static void all_reduce_range(MirroredStrategy& strategy, Replica& replica, std::int64_t step,
                               std::span<float> values, const vgpu::PackFrame& frame,
                               Lane lane = Lane::kCompute);
  vgpu::PackFrame pack_frame(std::size_t pack) const;
  // Overlap: checks and sends every pack whose gradients are all at or after `from`.
  void send_written_packs(std::size_t from);
  // backward() in two: what it queues, and the wait for the loss and the NaN search after.
  void queue_backward(const Tensor& logits, LossStats* stats);
  void finish_backward(const LossStats& stats);
  LossStats captured_forward_and_backward();
  float loss_scale_of_step() const;
  [[noreturn]] void diverged(const std::string& layer, double value, const std::string& tensor = "",
                             std::size_t index = 0) const;

  MirroredStrategy* strategy_;
  Replica* replica_;
  std::size_t global_batch_size_;
  std::size_t nominal_batch_size_;  // per replica x replicas, as the data was batched
  std::int64_t step_;
  // The NaN search backward() queued and waited for, for apply_gradients to use.
  std::size_t gradient_check_ = 0;
  bool gradient_checked_ = false;
  bool overlapping_ = false;    // overlap_packs_with_backward() took effect
  std::size_t packs_sent_ = 0;  // to the communication lane, in this step
};

using StepFunction = std::function<LossStats(ReplicaContext&)>;

// The mirrored state a checkpoint keeps, one copy (every replica holds the same): the weights and
// the optimizer's slots and progress.
struct ReplicaState {
  struct Slot {
    std::string name;  // OptimizerSlot::name
    std::vector<float> values;
  };
  std::vector<float> params;  // the model's flat buffer (Model::weight_tensors() cut it)
  std::vector<Slot> slots;    // the optimizer's, in its order
  OptimizerProgress progress;
};

LossStats reduce_sum(const std::vector<LossStats>& per_replica);

class MirroredStrategy {
 public:
  // One replica per device. Creates and initialises the models (throws vgpu::OutOfMemoryError
  // when one does not fit its device) and std::invalid_argument for an unknown all-reduce or
  // one that cannot run on these devices (nccl on CPU-backed or shared GPUs), saying why.
  // `events` (optional) is the first listener, so it sees the initial broadcast too.
  //
  // `workers` (optional, outlives the strategy): this process is one worker of several, as in
  // TensorFlow's MultiWorkerMirroredStrategy (multi_worker.cpp). Every worker makes its
  // strategy with the same options and as many devices (else std::invalid_argument, on every
  // worker). Then the replicas in sync are every worker's, the variables are those of worker 0
  // (broadcast at the start), each worker takes its replicas' part of every global batch, the
  // all-reduce goes within the worker, across workers, and back (HierarchicalAllReduce), and
  // the statistics of a step or an evaluation are summed over the workers.
  MirroredStrategy(std::vector<vgpu::Device*> devices, StrategyOptions options,
                   EventStore* events = nullptr, vgpu::WorkerGroup* workers = nullptr);
  ~MirroredStrategy();
  MirroredStrategy(const MirroredStrategy&) = delete;
  MirroredStrategy& operator=(const MirroredStrategy&) = delete;

  // Every worker's replicas: the global batch is per-replica batch x this.
  int num_replicas_in_sync() const { return num_local_replicas() * num_workers(); }
  // This process's replicas (its devices); replica(i) and devices() are these.
  int num_local_replicas() const { return static_cast<int>(replicas_.size()); }
  int num_workers() const { return workers_ != nullptr ? workers_->size() : 1; }
  int worker_index() const { return workers_ != nullptr ? workers_->rank() : 0; }
  vgpu::WorkerGroup* workers() const { return workers_; }
  // With several workers: the training steps after which every worker's replica 0 held the same
  // weights, bit for bit (their fingerprints compared; a difference fails the step instead).
  std::int64_t workers_found_in_sync() const { return workers_found_in_sync_; }
  // replica_id_in_sync_group of this worker's replica 0.
  int first_replica_id() const { return worker_index() * num_local_replicas(); }
  const std::vector<vgpu::Device*>& devices() const { return devices_; }
  Replica& replica(int i) { return *replicas_[static_cast<std::size_t>(i)]; }
  const StrategyOptions& options() const { return options_; }
  // Host thread, between steps: how the next training steps scale each replica's loss (a custom
  // loop's choice, as its compute_average_loss call is in TensorFlow). Every worker must set the
  // same.
  void set_loss_scaling(LossScaling scaling) { options_.loss_scaling = scaling; }
  const vgpu::AllReduce& all_reduce() const { return *all_reduce_; }
  // The gradients' packs, in the order they are all-reduced (one: the whole buffer).
  const std::vector<GradientPack>& packs() const { return packs_; }
  // The all-reduce's steps in a training step: every pack's.
  int all_reduce_steps() const;
  // mirrorlab's lines about the all-reduce: how it runs, and for auto why it is TensorFlow's
  // choice (vgpu::AllReduceChoice::notes).
  const std::vector<std::string>& all_reduce_notes() const { return all_reduce_notes_; }
  // What TensorFlow 2.21 logs (at INFO) when it all-reduces this model's gradients the same way
  // over these devices and packs; "" where TensorFlow has no such algorithm (one-shot), or packs
  // are by count (num_packs: NcclAllReduce's option, whose line differs).
  std::string tensorflow_all_reduce_log() const;
  // TensorFlow's device tuple, full names:
  // "('/job:localhost/replica:0/task:0/device:GPU:0',
  // '/job:localhost/replica:0/task:0/device:GPU:1')"
  std::string device_tuple() const;
  std::int64_t steps_done() const { return step_; }
  // Who watches or steers the steps (core/strategy/step_listener.h): the event store, the step
  // recorder, the step controller, a test. Told in the order added; between steps only. nullptr:
  // nothing. `before_others`: told before those already there, as a fault must be (what it does to
  // a step is then what the recorder and the events see).
  void add_listener(StepListener* listener, bool before_others = false);
  void remove_listener(StepListener* listener);

  // strategy.run(fn, args=(batch,)): splits the batch, runs fn on every replica concurrently on
  // its device, waits for all of them; one result per replica (of this worker). Counts as a
  // training step: with check_sync and N > 1 the replicas' weight fingerprints are compared
  // afterwards (every worker's, with several).
  std::vector<LossStats> run(const GlobalBatch& batch, const StepFunction& fn);
  // The fit loop's step: forward, backward, apply_gradients on every replica. Summed stats (over
  // every worker's replicas).
  LossStats train_step(const GlobalBatch& batch);
  // Distributed evaluation of the whole dataset in global batches of per-replica size * N.
  LossStats evaluate(const Dataset& data, std::size_t batch_per_replica);
  // The same, `stop` asked between its global batches (with several workers every worker asks
  // it between the same ones, so it must be their agreed answer): true ends the pass there,
  // with nullopt and no sum across the workers.
  std::optional<LossStats> evaluate(const Dataset& data, std::size_t batch_per_replica,
                                    const std::function<bool()>& stop);
  // Keras' model.predict: the logits of every example of `data` (its labels unused), row by row
  // in its order, in global batches of `global_batch` (any size: each split among the replicas
  // as TensorFlow splits a short batch, ceil(global_batch / N) each until none are left). With
  // several workers, the rows of other workers' shards are 0: a sum across the workers fills
  // them.
  std::vector<float> predict(const Dataset& data, std::size_t global_batch);
  // Throws ReplicasOutOfSync naming the replicas (or the worker) that differ from replica 0.
  void check_in_sync();

  // Host thread, between steps: replica 0's state (core/strategy/mirrored_state.cpp).
  ReplicaState state();
  // Host thread, between steps: every replica takes `state` (whatever the number of replicas
  // that left it), and the training steps count on from `steps_done`. Throws
  // std::invalid_argument naming what does not fit this model and optimizer (the parameter
  // count, a slot's name or size, the progress) before anything is copied: nothing is
  // half-loaded.
  void restore(const ReplicaState& state, std::int64_t steps_done);
  // Host thread, between steps: every replica's optimizer updates with `learning_rate` from now
  // on (Keras' optimizer variable, which a weights file sets), and options() says it. Throws
  // std::invalid_argument, changing nothing, for one that is not a finite number above 0.
  void set_learning_rate(float learning_rate);

 private:
  friend class ReplicaContext;
  // run() for train_step, whose packs may overlap backward (StepStart::packs_may_overlap).
  std::vector<LossStats> run_training(const GlobalBatch& batch, const StepFunction& fn,
                                      bool packs_may_overlap);
  std::vector<LossStats> run_on_replicas(const GlobalBatch& batch, const StepFunction& fn,
                                         bool training, bool packs_may_overlap = false);
  void broadcast_initial_variables();
  void choose_all_reduce();
  // The replicas' shards of the global batch: this worker's part of the split over every
  // replica in sync (offsets into the whole batch).
  std::vector<Shard> local_shards(std::size_t batch_size, std::size_t per_replica) const;
  // Evaluation's and prediction's walk: `data` in order, in global batches of `global` examples
  // (the last one short) of at most batch_per_replica a replica, `each(first example's index,
  // batch)` for each until it returns false. Whether the walk reached the end.
  bool for_each_global_batch(const Dataset& data, std::size_t global, std::size_t batch_per_replica,
                             const std::function<bool(std::size_t, const GlobalBatch&)>& each);
  // multi_worker.cpp: what several workers add.
  void check_workers_agree();      // same device count and model on every worker
  void broadcast_from_worker_0();  // replica 0's variables := worker 0's
  LossStats sum_over_workers(const LossStats& mine);
  void check_workers_in_sync();  // replica 0's fingerprint equal on every worker
  void tell_workers(const std::string& activity);
  // Inside a training step, on replica `rank`'s thread: it has finished `boundary`.
  void reached(int rank, StepBoundary boundary);
  PausePoint pause_point(StepBoundary boundary) const;  // of the current step
  // Every replica has reached `point` (`point.pausing`: the others wait for this to return): the
  // listeners see it, then each may hold the replicas there.
  void all_replicas_reached(PausePoint point);

  // Hands the all-reduce's steps to the listeners.
  class HookObserver : public vgpu::StepObserver {
   public:
    explicit HookObserver(MirroredStrategy& strategy) : strategy_(&strategy) {}
    void on_step(const vgpu::CollectiveStep& step) override;
    void on_rank_step(int rank, int index, std::string_view phase) override;

   private:
    MirroredStrategy* strategy_;
  };

  std::vector<vgpu::Device*> devices_;
  StrategyOptions options_;
  vgpu::WorkerGroup* workers_ = nullptr;
  std::int64_t workers_found_in_sync_ = 0;
  std::vector<StepListener*> listeners_;
  std::unique_ptr<vgpu::AllReduce> all_reduce_;
  const vgpu::AllReduceAlgorithm* all_reduce_row_ = nullptr;  // its row of the table
  std::vector<std::string> all_reduce_notes_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<GradientPack> packs_;
  CrossReplicaRendezvous rendezvous_;
  HookObserver hook_observer_{*this};
  // Latched by the host before a step's replicas start: whether this step tells the listeners of
  // its boundaries, and whether the replicas meet at each (a listener asked to hold them there).
  // Both false in evaluation.
  bool step_listened_ = false;
  bool step_meets_ = false;
  std::shared_ptr<vgpu::CancellableBarrier> meeting_;  // this step's, when it meets
  // Boundaries counted per replica (its k-th), and how many replicas reached each k-th: the
  // last to reach one calls the listeners for all.
  static constexpr int kMaxBoundaries = 64;
  std::vector<int> passed_;
  std::unique_ptr<std::atomic<int>[]> arrivals_;
  std::int64_t step_ = 0;
};

}  // namespace mirrorlab::core
