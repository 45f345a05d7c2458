// What one training step of a model costs in arithmetic, counted from its layers (LayerFlops:
// a multiply-add counts 2, an add, multiply, comparison or square root 1), for the timing model's
// compute scaled to a machine's FLOP/s (`mirrorlab compare`). Forward and backward are per
// example; the optimizer's update is per step, per parameter. Left out: the loss (softmax and
// cross-entropy, about a hundred operations per example beside millions), the copies (Flatten,
// im2col, the shard to the device) and the all-reduce (the timing model prices it apart).
#pragma once

#include <cstddef>
#include <span>

#include "core/nn/model.h"
#include "core/nn/model_spec.h"
#include "core/nn/optimizer.h"

namespace mirrorlab::core {

struct TrainingFlops {
  std::size_t params = 0;
  double forward = 0;   // per example
  double backward = 0;  // per example: every layer's parameter gradients, and every input
                        // gradient but the first layer's (Model::backward computes none there)
  double update = 0;    // per step: the optimizer over every parameter
  // One replica's step at `batch` examples.
  double per_step(std::size_t batch) const {
    return (forward + backward) * static_cast<double>(batch) + update;
  }
};

// The update's arithmetic per parameter, as the CPU kernels do it: SGD 2 (w -= lr g), with
// momentum 4 (v = m v - lr g; w += v); Adam 12 (m: 3, v: 4, w -= lr_t m / (sqrt(v) + eps): 5);
// Nadam 18 (Adam's, and g', m', v' and m-bar: 6 more).
double update_flops_per_param(const OptimizerConfig& optimizer);

TrainingFlops training_flops(ModelKind model, const OptimizerConfig& optimizer);
// A model of the user's (keras.Sequential in Python), on 28x28x1 images as every model here.
TrainingFlops training_flops(std::span<const LayerSpec> layers, const OptimizerConfig& optimizer);

}  // namespace mirrorlab::core
