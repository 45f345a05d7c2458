// What mirrored training is compared with: a plain loop on one arena (no devices, no threads, no
// all-reduce) fed the same global batches in the same order as fit() feeds a strategy, and how
// far apart two sets of weights are.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "core/strategy/plain_trainer.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::testing_reference {

// A strategy of `model` and `optimizer` at learning rate `lr`, seed 11.
inline core::StrategyOptions options_for(core::ModelKind model, core::OptimizerKind optimizer,
                                         float lr) {
  core::StrategyOptions o;
  o.model = model;
  o.optimizer.kind = optimizer;
  o.optimizer.learning_rate = lr;
  o.seed = 11;
  return o;
}

inline std::vector<float> plain_single_device_training(const core::Dataset& data,
                                                       const core::StrategyOptions& o,
                                                       std::size_t global_batch, int steps,
                                                       std::uint64_t shuffle_seed) {
  vgpu::MemoryArena arena("/plain", 512 * vgpu::kMiB);
  core::PlainTrainer trainer(arena, o);
  int done = 0;
  for (int epoch = 1; done < steps; ++epoch) {
    const auto order = core::shuffled_indices(data.size(), shuffle_seed, epoch);
    for (std::size_t begin = 0; begin < data.size() && done < steps; begin += global_batch) {
      const std::size_t count = std::min(global_batch, data.size() - begin);
      trainer.train_step(core::GlobalBatch{&data, std::span(order).subspan(begin, count)});
      ++done;
    }
  }
  return {trainer.model().params().begin(), trainer.model().params().end()};
}

// fit() for `steps` steps of `global_batch` examples on `devices` CPU virtual GPUs, as one worker
// of `workers` (or alone); replica 0's weights.
inline std::vector<float> mirrored_training(const core::Dataset& data,
                                            const core::StrategyOptions& o, int devices,
                                            vgpu::WorkerGroup* workers, std::size_t global_batch,
                                            int steps, std::uint64_t shuffle_seed) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(devices, 256);
  core::MirroredStrategy strategy(registry.logical_devices(), o, nullptr, workers);
  core::FitOptions fit;
  fit.epochs = 100;
  fit.max_steps = steps;
  fit.batch_per_replica = global_batch / static_cast<std::size_t>(strategy.num_replicas_in_sync());
  fit.seed = shuffle_seed;
  const core::History history = core::fit(strategy, data, nullptr, fit);
  EXPECT_EQ(history.steps, steps);
  return strategy.replica(0).model().params_to_host();
}

// Expects `w` within `tolerance` of `reference`: as a whole (||w - ref|| / ||ref||) and element
// by element, relative to the element or, for the tiny ones, to the weights' RMS (summing per
// replica and then across replicas rounds differently from one big sum, and 30 steps grow that
// to a few 1e-8 absolute, which is large next to a weight of 1e-3).
inline void expect_close_weights(std::span<const float> w, std::span<const float> reference,
                                 double tolerance, const std::string& what) {
  ASSERT_EQ(w.size(), reference.size()) << what;
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double d = double{w[i]} - reference[i];
    diff2 += d * d;
    ref2 += double{reference[i]} * reference[i];
  }
  const double relative = std::sqrt(diff2 / ref2);
  const double rms = std::sqrt(ref2 / static_cast<double>(w.size()));
  std::size_t worst = 0;
  double worst_err = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double err =
        std::abs(double{w[i]} - reference[i]) / std::max(std::abs(double{reference[i]}), rms);
    if (err > worst_err) worst_err = err, worst = i;
  }
  EXPECT_LE(relative, tolerance) << what << ": ||w - w_ref|| / ||w_ref|| = " << relative
                                 << "; worst element " << worst << ": " << w[worst] << " vs "
                                 << reference[worst];
  EXPECT_LE(worst_err, tolerance) << what << " element " << worst << ": " << w[worst] << " vs "
                                  << reference[worst];
}

}  // namespace mirrorlab::testing_reference
