#include "core/mirrored_strategy.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/batch.h"
#include "core/fingerprint.h"
#include "virtualgpu/all_reduce_choice.h"
#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::core {

std::vector<Shard> split_global_batch(std::size_t global_count, int num_replicas,
                                      std::size_t per_replica_batch) {
  if (num_replicas <= 0 || global_count > num_replicas * per_replica_batch) {
    throw std::invalid_argument(
        "a global batch of " + std::to_string(global_count) + " examples does not fit " +
        std::to_string(num_replicas) + " replicas of " + std::to_string(per_replica_batch) +
        " examples each");
  }
  std::vector<Shard> shards;
  for (int r = 0; r < num_replicas; ++r) {
    const std::size_t begin = std::min(global_count, r * per_replica_batch);
    const std::size_t end = std::min(global_count, begin + per_replica_batch);
    shards.push_back(Shard{r, begin, end - begin});
  }
  return shards;
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
      model_(Model::create(options.model, device.memory())),
      optimizer_(make_optimizer(options.optimizer, model_->num_params(), device.memory())) {}

void Replica::load_shard(const Dataset& data, std::span<const std::uint32_t> indices) {
  gather_batch(data, indices, device_->memory(), images_, labels_);
}

// ---------------------------------------------------------------------------------------------
// ReplicaContext

int ReplicaContext::num_replicas_in_sync() const { return strategy_->num_replicas_in_sync(); }

void ReplicaContext::record(Phase phase, vgpu::TimePoint begin, std::size_t bytes) {
  if (strategy_->events_ == nullptr) return;
  strategy_->events_->add(
      RunEvent{replica_->id(), phase, step_, begin, vgpu::Clock::now(), bytes});
}

const Tensor& ReplicaContext::forward() {
  const auto begin = vgpu::Clock::now();
  const Tensor& logits = model().forward(images());
  record(Phase::kForward, begin);
  return logits;
}

LossStats ReplicaContext::backward(const Tensor& logits) {
  const auto begin = vgpu::Clock::now();
  const float scale = 1.0f / static_cast<float>(std::max<std::size_t>(1, global_batch_size_));
  LossStats stats =
      softmax_cross_entropy(logits, labels(), scale, &grad_logits_, &model().arena());
  model().backward(grad_logits_);
  record(Phase::kBackward, begin);
  return stats;
}

LossStats ReplicaContext::evaluate() {
  const auto begin = vgpu::Clock::now();
  const Tensor& logits = model().forward(images());
  LossStats stats = softmax_cross_entropy(logits, labels(), 0.0f, nullptr);
  record(Phase::kEvaluate, begin);
  return stats;
}

void ReplicaContext::all_reduce_sum(std::span<float> values) {
  const auto begin = vgpu::Clock::now();
  strategy_->rendezvous_.all_reduce(replica_->id(), values, vgpu::ReduceOp::kSum);
  record(Phase::kAllReduce, begin, values.size_bytes());
}

void ReplicaContext::apply_gradients() {
  all_reduce_sum(model().grads());
  const auto begin = vgpu::Clock::now();
  replica_->optimizer().apply(model().params(), model().grads());
  record(Phase::kUpdate, begin);
}

// ---------------------------------------------------------------------------------------------
// MirroredStrategy

MirroredStrategy::MirroredStrategy(std::vector<vgpu::Device*> devices, StrategyOptions options,
                                   EventStore* events)
    : devices_(std::move(devices)),
      options_(std::move(options)),
      events_(events),
      rendezvous_(static_cast<int>(devices_.size())) {
  if (devices_.empty()) throw std::invalid_argument("MirroredStrategy needs at least one device");
  choose_all_reduce();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    replicas_.push_back(std::make_unique<Replica>(static_cast<int>(i), *devices_[i], options_));
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

std::string MirroredStrategy::device_tuple() const {
  std::vector<std::string> names;
  for (const vgpu::Device* d : devices_) names.push_back(d->name());
  return vgpu::device_tuple(names);
}

void MirroredStrategy::choose_all_reduce() {
  // A pure function of the devices and the NCCL there is (tested without a GPU); the log lines
  // are TensorFlow's: warnings first (the NCCL fallback), then what is used.
  const vgpu::AllReduceChoice choice = vgpu::choose_all_reduce(
      options_.all_reduce, vgpu::placements_of(devices_), vgpu::nccl_runtime());
  all_reduce_ = vgpu::make_all_reduce(choice.algorithm, devices_, 0);
  all_reduce_warnings_ = choice.warnings;
  all_reduce_log_ = choice.warnings;
  all_reduce_log_.insert(all_reduce_log_.end(), choice.info.begin(), choice.info.end());
}

void MirroredStrategy::broadcast_initial_variables() {
  Model& primary = replicas_[0]->model();
  primary.init(options_.seed);
  const std::span<const float> source = primary.params();
  for (std::size_t i = 1; i < replicas_.size(); ++i) {
    Replica* replica = replicas_[i].get();
    replica->device().stream().enqueue([this, replica, source] {
      const auto begin = vgpu::Clock::now();
      std::span<float> target = replica->model().params();
      std::memcpy(target.data(), source.data(), source.size_bytes());
      if (events_ != nullptr) {
        events_->add(RunEvent{replica->id(), Phase::kBroadcastInit, 0, begin,
                              vgpu::Clock::now(), source.size_bytes()});
      }
    });
  }
  for (vgpu::Device* d : devices_) d->stream().synchronize();
}

std::vector<LossStats> MirroredStrategy::run(const GlobalBatch& batch, const StepFunction& fn) {
  std::vector<LossStats> results = run_on_replicas(batch, fn, /*training=*/true);
  ++step_;
  if (options_.check_sync && replicas_.size() > 1) check_in_sync();
  return results;
}

LossStats MirroredStrategy::train_step(const GlobalBatch& batch) {
  return reduce_sum(run(batch, [](ReplicaContext& ctx) {
    const Tensor& logits = ctx.forward();
    LossStats stats = ctx.backward(logits);
    ctx.apply_gradients();
    return stats;
  }));
}

LossStats MirroredStrategy::evaluate(const Dataset& data, std::size_t batch_per_replica) {
  const std::size_t global = batch_per_replica * replicas_.size();
  std::vector<std::uint32_t> indices(data.size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::uint32_t>(i);
  LossStats total;
  for (std::size_t begin = 0; begin < indices.size(); begin += global) {
    const std::size_t count = std::min(global, indices.size() - begin);
    const GlobalBatch batch{&data, std::span(indices).subspan(begin, count), batch_per_replica};
    total += reduce_sum(run_on_replicas(
        batch, [](ReplicaContext& ctx) { return ctx.evaluate(); }, /*training=*/false));
  }
  return total;
}

void MirroredStrategy::check_in_sync() {
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
                            ": weights of" + differing + " differ from " +
                            devices_[0]->name() + " (fingerprint " + text +
                            "). Mirrored replicas must apply identical updates: the all-reduce "
                            "or the update is broken.");
  }
}

std::vector<LossStats> MirroredStrategy::run_on_replicas(const GlobalBatch& batch,
                                                         const StepFunction& fn, bool training) {
  const int n = num_replicas_in_sync();
  const std::size_t per_replica =
      batch.batch_per_replica > 0 ? batch.batch_per_replica : (batch.size() + n - 1) / n;
  std::vector<LossStats> results(static_cast<std::size_t>(n));
  rendezvous_.reset(all_reduce_.get(), observer_, devices_);
  const std::vector<Shard> shards = split_global_batch(batch.size(), n, per_replica);
  const bool fingerprint = training && options_.check_sync && n > 1;
  for (int r = 0; r < n; ++r) {
    Replica* replica = replicas_[static_cast<std::size_t>(r)].get();
    const Shard shard = shards[static_cast<std::size_t>(r)];
    replica->device().stream().enqueue([this, replica, shard, &batch, &fn, &results,
                                        fingerprint] {
      try {
        const auto begin = vgpu::Clock::now();
        replica->load_shard(*batch.data, batch.indices.subspan(shard.begin, shard.count));
        if (events_ != nullptr) {
          events_->add(RunEvent{replica->id(), Phase::kSplit, step_, begin, vgpu::Clock::now(),
                                replica->images().size() * sizeof(float)});
        }
        ReplicaContext ctx(*this, *replica, batch.size(), step_);
        results[static_cast<std::size_t>(replica->id())] = fn(ctx);
        rendezvous_.depart(replica->id());
        if (fingerprint) replica->fingerprint_ = core::fingerprint(replica->model().params());
      } catch (...) {
        rendezvous_.abort();
        throw;
      }
    });
  }
  // Wait for every replica; report the first real failure, not the aborts it caused.
  vgpu::synchronize_all(devices_);
  return results;
}

}  // namespace mirrorlab::core
