#include "core/session/step_recorder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {
namespace {

// Boundaries per step the recorder counts arrivals for (5 phases in a training step; a custom
// step function may pass forward and backward more than once).

// Four floats in one SSE register (a GCC/Clang vector extension): GCC does not vectorize a
// plain float reduction without -ffast-math, and this runs on every layer of every step.
using Float4 = float __attribute__((vector_size(16)));

double l2_norm(std::span<const float> values) {
  // Float partial sums in four registers, emptied into a double every block, so a layer of
  // 700k values sums to about 1e-6 relative at memory speed (measured 75 us vs 133 us in double).
  constexpr std::size_t kBlock = 4096;
  const std::size_t n = values.size();
  double sum = 0;
  std::size_t i = 0;
  while (i < n) {
    const std::size_t begin = i;
    const std::size_t end = std::min(n, i + kBlock);
    Float4 acc[4] = {};
    for (; i + 16 <= end; i += 16) {
      for (int k = 0; k < 4; ++k) {
        Float4 x;
        std::memcpy(&x, &values[i + 4 * static_cast<std::size_t>(k)], sizeof x);
        acc[k] += x * x;
      }
    }
    const Float4 total = acc[0] + acc[1] + acc[2] + acc[3];
    const double block = double{total[0]} + total[1] + total[2] + total[3];
    if (std::isfinite(block)) {
      sum += block;
    } else {
      // Squares past 3.4e38 (a diverging run's gradients of 1e20): the block again in double,
      // so a finite gradient never shows an infinite norm.
      for (std::size_t j = begin; j < i; ++j) sum += double{values[j]} * values[j];
    }
    for (; i < end; ++i) sum += double{values[i]} * values[i];
  }
  return std::sqrt(sum);
}

}  // namespace

std::span<const float> read_device_values(Ops& ops, std::span<const float> values,
                                          std::vector<float>& scratch) {
  if (ops.host_accessible()) return values;
  // Device memory (CUDA): copied on the device's own stream, so the copy comes after the work
  // that wrote the values (the backward pass, the all-reduce), and copy_to_host waits for it.
  // The callers run while the device's replica is parked, so nothing else uses its stream.
  scratch.resize(values.size());
  ops.copy_to_host(scratch.data(), values.data(), values.size_bytes());
  return scratch;
}

MomentProgress moment_progress(const RecordedStep& record, std::size_t point) {
  MomentProgress p;
  for (std::size_t i = 0; i <= point && i < record.points.size(); ++i) {
    switch (record.points[i].boundary) {
      case StepBoundary::kSplit:
        p.split = true;
        break;
      case StepBoundary::kForward:
        p.forward = true;
        break;
      case StepBoundary::kBackward:
        p.backward = true;
        break;
      case StepBoundary::kAllReduceStep:
        ++p.collective_steps;
        break;
      case StepBoundary::kUpdate:
        p.updated = true;
        break;
    }
  }
  // One replica has no all-reduce steps: its gradients are "reduced" once it moves on.
  p.all_reduced = p.backward && p.collective_steps >= record.all_reduce_steps &&
                  (record.all_reduce_steps > 0 || p.updated);
  return p;
}

MomentProgress final_progress(const RecordedStep& record) {
  if (record.points.empty()) return {};
  return moment_progress(record, record.points.size() - 1);
}

RecordedStep StepRecorder::snapshot() const {
  std::lock_guard lock(mutex_);
  return published_;
}

bool StepRecorder::snapshot_if_newer(std::uint64_t& version, RecordedStep& out) const {
  std::lock_guard lock(mutex_);
  const std::uint64_t now = version_.load(std::memory_order_relaxed);
  if (now == version) return false;
  out = published_;
  version = now;
  return true;
}

void StepRecorder::choose_layer(int layer) { requested_layer_.store(layer); }

StepNeeds StepRecorder::begin_step(const StepStart& start) {
  const GlobalBatch& batch = *start.batch;
  const std::vector<Shard>& shards = *start.shards;
  if (replicas_ != start.replicas) {
    replicas_ = start.replicas;
    building_.layers.clear();
    for (const LayerSummary& l : replicas_.front()->model().summary()) {
      if (l.params > 0)
        building_.layers.push_back(RecordedLayer{l.name, l.type, l.offset, l.params});
    }
    scratch_.assign(replicas_.size(), {});
  }
  building_.step = start.step;
  building_.complete = false;
  building_.start = vgpu::Clock::now();
  building_.indices.assign(batch.indices.begin(), batch.indices.end());
  building_.labels.resize(batch.indices.size());
  for (std::size_t i = 0; i < batch.indices.size(); ++i) {
    building_.labels[i] = batch.data->labels[batch.indices[i]];
  }
  const std::size_t pictures = std::min(batch.indices.size(), kRecordedImages);
  const std::size_t pixels = batch.data->rows * batch.data->cols;
  building_.image_rows = batch.data->rows;
  building_.image_cols = batch.data->cols;
  building_.images.resize(pictures * pixels);
  for (std::size_t i = 0; i < pictures; ++i) {
    const std::uint8_t* image = batch.data->image(batch.indices[i]);
    std::copy(image, image + pixels,
              building_.images.begin() + static_cast<std::ptrdiff_t>(i * pixels));
  }
  // As the dataset was batched; with none given, the largest shard (a full batch's).
  building_.batch_per_replica = batch.batch_per_replica;
  if (building_.batch_per_replica == 0) {
    for (const Shard& s : shards) {
      building_.batch_per_replica = std::max(building_.batch_per_replica, s.count);
    }
  }
  const int layers = static_cast<int>(building_.layers.size());
  const int requested = requested_layer_.load();
  building_.chosen_layer =
      layers == 0 ? 0 : std::clamp(requested < 0 ? 0 : requested, 0, layers - 1);
  building_.chosen_layer_values =
      layers == 0 ? 0 : building_.layers[static_cast<std::size_t>(building_.chosen_layer)].params;
  building_.chosen_layer_from =
      (building_.chosen_layer_values -
       std::min(building_.chosen_layer_values, kMaxRecordedGradientValues)) /
      2;
  building_.replicas.resize(shards.size());
  for (std::size_t r = 0; r < shards.size(); ++r) {
    ReplicaRecord& rec = building_.replicas[r];
    rec.device = replicas_[r]->device().name();
    rec.shard_begin = shards[r].begin;
    rec.shard_count = shards[r].count;
    rec.gradient_norms.clear();
    rec.gradient_before.clear();
    rec.gradient_after.clear();
    rec.fingerprint = 0;
    rec.has_fingerprint = false;
    rec.boundaries_passed = 0;
  }
  building_.all_reduce = start.all_reduce;
  building_.all_reduce_steps = start.all_reduce_steps;
  building_.packs = start.packs;
  building_.collective_steps.clear();
  building_.points.clear();
  building_.packs_overlapped = false;
  StepNeeds needs;
  // A step whose packs go beside backward has no moment when every replica's gradients are
  // complete and not yet reduced: it is recorded without its boundaries (end_step()).
  needs.boundaries_unless_overlap = true;
  needs.fingerprints = true;
  return needs;
}

std::span<const float> StepRecorder::gradients(int rank) {
  Replica& replica = *replicas_[static_cast<std::size_t>(rank)];
  return read_device_values(replica.ops(), replica.model().grads(),
                            scratch_[static_cast<std::size_t>(rank)]);
}

void StepRecorder::copy_chosen_layer(std::span<const float> grads, std::vector<float>& out) const {
  out.clear();
  if (grads.empty() || building_.layers.empty()) return;
  const RecordedLayer& layer = building_.layers[static_cast<std::size_t>(building_.chosen_layer)];
  const auto kept = grads.subspan(layer.offset + building_.chosen_layer_from,
                                  std::min(layer.params, kMaxRecordedGradientValues));
  out.assign(kept.begin(), kept.end());
}

void StepRecorder::on_replica_reached(Replica& replica, StepBoundary boundary) {
  const int rank = replica.id();
  ReplicaRecord& rec = building_.replicas[static_cast<std::size_t>(rank)];
  if (boundary == StepBoundary::kBackward) {
    const std::span<const float> grads = gradients(rank);
    rec.gradient_norms.clear();
    if (!grads.empty()) {
      for (const RecordedLayer& l : building_.layers) {
        rec.gradient_norms.push_back(l2_norm(grads.subspan(l.offset, l.params)));
      }
    }
    copy_chosen_layer(grads, rec.gradient_before);
  } else if (boundary == StepBoundary::kUpdate) {
    rec.fingerprint = replica.last_fingerprint();
    rec.has_fingerprint = true;
    // One replica: no all-reduce step saw the reduced gradient; it is the replica's own.
    if (building_.all_reduce_steps == 0) copy_chosen_layer(gradients(rank), rec.gradient_after);
  }
  ++rec.boundaries_passed;
}

void StepRecorder::on_collective_step(const vgpu::CollectiveStep& step) {
  building_.collective_steps.push_back(step);
  if (step.index + 1 != building_.all_reduce_steps || replicas_.empty()) return;
  // The last step: every rank is parked, so every replica's buffer may be read from here.
  for (std::size_t r = 0; r < building_.replicas.size(); ++r) {
    copy_chosen_layer(gradients(static_cast<int>(r)), building_.replicas[r].gradient_after);
  }
}

void StepRecorder::on_all_reached(const PausePoint& point) {
  building_.points.push_back(point);
  if (point.pausing) publish();  // every replica is parked: the record may be copied
}

void StepRecorder::end_step(bool completed) {
  if (!completed) return;  // a failed step keeps what was published last
  // No boundary told, though this recorder asks for them: the strategy went without them, as it
  // does only for a step whose packs overlapped backward.
  const bool passed_none =
      std::all_of(building_.replicas.begin(), building_.replicas.end(),
                  [](const ReplicaRecord& rec) { return rec.boundaries_passed == 0; });
  if (passed_none && !replicas_.empty()) {
    // Every replica is done: the gradients left in place are the all-reduced ones.
    building_.packs_overlapped = true;
    for (std::size_t r = 0; r < building_.replicas.size(); ++r) {
      ReplicaRecord& rec = building_.replicas[r];
      copy_chosen_layer(gradients(static_cast<int>(r)), rec.gradient_after);
      rec.fingerprint = replicas_[r]->last_fingerprint();
      rec.has_fingerprint = true;
    }
  }
  building_.complete = true;
  publish();
}

void StepRecorder::publish() {
  std::lock_guard lock(mutex_);
  published_ = building_;
  version_.fetch_add(1, std::memory_order_release);
}

}  // namespace mirrorlab::core
