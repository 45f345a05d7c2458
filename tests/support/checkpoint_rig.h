// Shared by the checkpoint tests: a small fit on CPU-backed virtual GPUs over synthetic data, run
// to a step limit, and the comparisons that say two runs are bit for bit the same.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/checkpoint/run_checkpoint.h"
#include "core/io/synthetic_dataset.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::testing_rig {

// 100 examples in global batches of 4 x 3 = 12: every epoch ends with a batch of 4, which
// TensorFlow splits 2 + 2 + 0 (a replica with none), and 9 steps make an epoch.
struct FitSetup {
  core::ModelKind model = core::ModelKind::kMlp;
  core::OptimizerKind optimizer = core::OptimizerKind::kAdam;
  int replicas = 3;
  std::size_t batch_per_replica = 4;
  std::int64_t max_steps = 60;
  int epochs = 8;
};

inline const core::Dataset& train_data() {
  static const core::Dataset data = core::synthetic_dataset(100, 11);
  return data;
}
inline const core::Dataset& validation_data() {
  static const core::Dataset data = core::synthetic_dataset(20, 12);
  return data;
}

struct FitRig {
  explicit FitRig(const FitSetup& s) : setup(s) {
    registry.set_logical_device_configuration(s.replicas, 256);
    settings.model = s.model;
    settings.optimizer.kind = s.optimizer;
    settings.optimizer.learning_rate = s.optimizer == core::OptimizerKind::kSgd ? 0.02f : 1e-3f;
    settings.optimizer.momentum = s.optimizer == core::OptimizerKind::kSgd ? 0.9f : 0.0f;
    settings.seed = 5;
    settings.epochs = s.epochs;
    settings.max_steps = s.max_steps;
    settings.batch_per_replica = s.batch_per_replica;
    settings.devices.gpus = s.replicas;
    strategy = std::make_unique<core::MirroredStrategy>(registry.logical_devices(),
                                                        core::strategy_options(settings));
    loop = std::make_unique<core::FitLoop>(*strategy, train_data(), &validation_data(),
                                           core::fit_options(settings));
  }
  void run_to_end() {
    while (!loop->done()) loop->step();
  }
  core::CheckpointConfig config() const {
    return core::checkpoint_config(settings, *strategy, *loop, core::dataset_crc32(train_data()));
  }
  core::Checkpoint checkpoint() { return core::capture_checkpoint(*strategy, *loop, config()); }

  FitSetup setup;
  core::RunSettings settings;
  vgpu::DeviceRegistry registry;
  std::unique_ptr<core::MirroredStrategy> strategy;
  std::unique_ptr<core::FitLoop> loop;
};

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Everything but the seconds, which no two runs share.
inline void expect_same_metrics(const core::Metrics& a, const core::Metrics& b) {
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.accuracy, b.accuracy);
  EXPECT_EQ(a.top5_accuracy, b.top5_accuracy);
  EXPECT_EQ(a.examples, b.examples);
}
inline void expect_same_history(const core::History& a, const core::History& b) {
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (std::size_t i = 0; i < a.epochs.size(); ++i) {
    SCOPED_TRACE("epoch " + std::to_string(i + 1));
    EXPECT_EQ(a.epochs[i].epoch, b.epochs[i].epoch);
    EXPECT_EQ(a.epochs[i].steps, b.epochs[i].steps);
    EXPECT_EQ(a.epochs[i].steps_per_epoch, b.epochs[i].steps_per_epoch);
    EXPECT_EQ(a.epochs[i].has_validation, b.epochs[i].has_validation);
    expect_same_metrics(a.epochs[i].train, b.epochs[i].train);
    expect_same_metrics(a.epochs[i].validation, b.epochs[i].validation);
  }
  EXPECT_EQ(a.final_train_loss, b.final_train_loss);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.train_examples, b.train_examples);
  EXPECT_EQ(a.stopped_by_max_steps, b.stopped_by_max_steps);
  EXPECT_EQ(a.stop_reason, b.stop_reason);
  EXPECT_EQ(a.first_step_loss, b.first_step_loss);
  EXPECT_EQ(a.loss_growth.has_value(), b.loss_growth.has_value());
}

inline void expect_same_state(const core::ReplicaState& a, const core::ReplicaState& b) {
  EXPECT_TRUE(same_bits(a.params, b.params)) << "the weights differ";
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (std::size_t i = 0; i < a.slots.size(); ++i) {
    EXPECT_EQ(a.slots[i].name, b.slots[i].name);
    EXPECT_TRUE(same_bits(a.slots[i].values, b.slots[i].values)) << "slot " << a.slots[i].name;
  }
  EXPECT_EQ(a.progress.iterations, b.progress.iterations);
  EXPECT_EQ(a.progress.momentum_schedule, b.progress.momentum_schedule);
}

}  // namespace mirrorlab::testing_rig
