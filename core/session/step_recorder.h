// What happened inside the current training step, kept for the GUI to draw: the global batch and
// its shards, each replica's gradient norms per layer, one chosen layer's gradient on every
// replica before and after the all-reduce, the weight fingerprints after the update, the
// all-reduce's steps with their transfers, and the moments of the step reached so far.
//
// A StepRecorder is one of a MirroredStrategy's step listeners (add_listener, between steps).
// Each replica writes its own part of the record on its own thread, without a lock; the record
// is published (copied under a mutex) when every replica is parked: at each pause of a paused
// step, and after the step. snapshot() hands the viewer a copy of the last published record, so
// the viewer never makes training wait longer than that copy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/strategy/step_boundary.h"
#include "core/strategy/step_listener.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::core {

class Ops;
class Replica;

// At most this many values of the chosen layer's gradient are kept per replica (its middle ones:
// a first dense layer's first values are the image's corner pixels', whose gradients are 0).
inline constexpr std::size_t kMaxRecordedGradientValues = 4096;

struct RecordedLayer {
  std::string name, type;
  std::size_t offset = 0;  // in the model's flat parameter buffer
  std::size_t params = 0;
};

struct ReplicaRecord {
  std::string device;                  // "/gpu:1"
  std::size_t shard_begin = 0;         // its examples: [shard_begin, shard_begin + shard_count)
  std::size_t shard_count = 0;         //   of the global batch
  std::vector<double> gradient_norms;  // per recorded layer, L2, before the all-reduce
  std::vector<float> gradient_before;  // the chosen layer, before the all-reduce
  std::vector<float> gradient_after;   // the same values after it (equal on every replica)
  std::uint64_t fingerprint = 0;       // of its weights after the update
  bool has_fingerprint = false;
  int boundaries_passed = 0;  // how far this replica is (its own count)
};

// How many examples of a global batch the record keeps the pictures of (the GUI draws no more).
inline constexpr std::size_t kRecordedImages = 1024;

struct RecordedStep {
  std::int64_t step = -1;  // -1: nothing recorded yet
  bool complete = false;   // every replica finished the step
  // The global batch: dataset indices and labels of its examples, in order; replica r got
  // [replicas[r].shard_begin, + shard_count).
  std::vector<std::uint32_t> indices;
  std::vector<std::uint8_t> labels;
  // The pictures of its first kRecordedImages examples, each image_rows x image_cols bytes, in
  // order: the record stands on its own, whoever owns the data set (a Python array freed since).
  std::vector<std::uint8_t> images;
  std::size_t image_rows = 0, image_cols = 0;
  std::size_t batch_per_replica = 0;    // as the dataset was batched, not this batch's shards
  std::vector<RecordedLayer> layers;    // the layers with parameters
  int chosen_layer = 0;                 // index into layers
  std::size_t chosen_layer_values = 0;  // all values of that layer
  std::size_t chosen_layer_from = 0;    // where in the layer the kept values start (the middle)
  std::vector<ReplicaRecord> replicas;
  std::string all_reduce;                              // algorithm name
  int all_reduce_steps = 0;                            // num_steps x packs, for these replicas
  int packs = 1;                                       // the gradient packs
  std::vector<vgpu::CollectiveStep> collective_steps;  // those done so far, in order
  // The moments every replica has reached so far, in order. To redraw moment i, show what was
  // recorded up to it: moment_progress(i).
  std::vector<PausePoint> points;
  vgpu::TimePoint start{};
  // Its packs were all-reduced beside backward: no boundary was recorded, so the gradients before
  // the all-reduce, their norms, the all-reduce's steps and the moments are not known.
  bool packs_overlapped = false;
};

// What of a RecordedStep existed at one moment of the step, for redrawing it afterwards.
struct MomentProgress {
  bool split = false, forward = false, backward = false, updated = false;
  int collective_steps = 0;  // all-reduce steps done
  bool all_reduced = false;  // the whole all-reduce is done
};
MomentProgress moment_progress(const RecordedStep& record, std::size_t point);
// The whole step (every phase seen, as after its last moment).
MomentProgress final_progress(const RecordedStep& record);

class StepRecorder : public StepListener {
 public:
  StepRecorder() = default;

  // ---- the viewer's side (any thread) ----
  // The last published record (a copy).
  RecordedStep snapshot() const;
  // Copies it into `out` only when it changed since `version` (then updates `version`).
  bool snapshot_if_newer(std::uint64_t& version, RecordedStep& out) const;
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Which layer's gradient values to keep (an index into RecordedStep::layers; clamped). Takes
  // effect at the next step.
  void choose_layer(int layer);

  // ---- the strategy's side (StepListener) ----
  // Needs every boundary (unless the step's packs overlap backward) and the fingerprints; never
  // meetings.
  StepNeeds begin_step(const StepStart& start) override;
  // Replica `replica`'s thread: its gradient norms and chosen values after backward, its
  // fingerprint after the update.
  void on_replica_reached(Replica& replica, StepBoundary boundary) override;
  // Kept; published for the viewer when the step pauses there (every replica parked).
  void on_all_reached(const PausePoint& point) override;
  // The all-reduce's step (all ranks parked); after its last, every replica's reduced values.
  void on_collective_step(const vgpu::CollectiveStep& step) override;
  void end_step(bool completed) override;

 private:
  void publish();
  std::span<const float> gradients(int rank);  // replica `rank`'s, readable on the host
  void copy_chosen_layer(std::span<const float> grads, std::vector<float>& out) const;

  mutable std::mutex mutex_;  // guards published_
  RecordedStep published_;
  std::atomic<std::uint64_t> version_{0};
  std::atomic<int> requested_layer_{-1};  // -1: the first layer

  // Written by the replicas during a step (each its own ReplicaRecord), the host between steps.
  RecordedStep building_;
  std::vector<Replica*> replicas_;           // of the step being recorded, in rank order
  std::vector<std::vector<float>> scratch_;  // per replica, for reads of device memory
};

// Host-readable view of `values`, which live in the memory of the device whose kernels are
// `ops`: the values themselves when the host can read that memory (CPU-backed virtual GPUs);
// otherwise a copy in `scratch`, made on that device's stream and waited for. The one place the
// recorder reads device data; call it only where that device's replica is parked (or from its
// own thread).
std::span<const float> read_device_values(Ops& ops, std::span<const float> values,
                                          std::vector<float>& scratch);

}  // namespace mirrorlab::core
