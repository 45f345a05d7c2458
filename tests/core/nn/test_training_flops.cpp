// The arithmetic of a training step, counted from the layers, against counts worked by hand for
// the two models mirrorlab trains (the timing model scales its compute to a machine's FLOP/s with
// these).
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/nn/layers.h"
#include "core/nn/training_flops.h"

namespace mirrorlab::core {
namespace {

OptimizerConfig optimizer(OptimizerKind kind, float momentum = 0.9f) {
  OptimizerConfig o;
  o.kind = kind;
  o.momentum = momentum;
  return o;
}

TEST(TrainingFlops, EachLayerCountsWhatItsKernelsDo) {
  // Dense 5 -> 3: 15 multiply-adds each way, the bias's 3 column sums in the gradients.
  const LayerFlops dense = make_dense("d", 3)->flops({5});
  EXPECT_DOUBLE_EQ(dense.forward, 30);
  EXPECT_DOUBLE_EQ(dense.param_gradients, 33);
  EXPECT_DOUBLE_EQ(dense.input_gradient, 30);
  // Conv2D 3x3, 2 filters on 4x5x3: 2x3 positions, patches of 27 values: 324 multiply-adds.
  const LayerFlops conv = make_conv2d_3x3("c", 2)->flops({4, 5, 3});
  EXPECT_DOUBLE_EQ(conv.forward, 648);
  EXPECT_DOUBLE_EQ(conv.param_gradients, 648 + 12);     // + one add per output value
  EXPECT_DOUBLE_EQ(conv.input_gradient, 648 + 6 * 27);  // + col2im's adds
  // MaxPool 2x2 on 4x4x2: 8 windows of 4, 3 comparisons each; ReLU one comparison per value.
  EXPECT_DOUBLE_EQ(make_max_pool_2x2("p")->flops({4, 4, 2}).forward, 24);
  EXPECT_DOUBLE_EQ(make_relu("r")->flops({4, 4, 2}).input_gradient, 32);
  EXPECT_DOUBLE_EQ(make_flatten("f")->flops({4, 4, 2}).forward, 0);
  EXPECT_THROW(make_dense("d", 3)->flops({4, 4}), std::invalid_argument);
}

TEST(TrainingFlops, TheCnnWorkedByHand) {
  // Conv2D(32) on 28x28x1: 26 x 26 = 676 positions x 9 x 32 = 194,688 multiply-adds.
  // ReLU over 26x26x32 = 21,632 values; MaxPool to 13x13x32 = 5,408 windows x 3 = 16,224.
  // Dense 5,408 -> 128: 692,224 multiply-adds; ReLU 128; Dense 128 -> 10: 1,280.
  const double conv = 2 * 194688.0, dense = 2 * 692224.0, dense_1 = 2 * 1280.0;
  const double forward = conv + 21632 + 16224 + dense + 128 + dense_1;
  EXPECT_DOUBLE_EQ(forward, 1814368);
  // Backward: every layer's parameter gradients (the biases' column sums: 676 x 32, 128, 10);
  // input gradients of all but the first layer (the Conv2D's is never computed; MaxPool only
  // routes).
  const double params = (conv + 21632) + (dense + 128) + (dense_1 + 10);
  const double inputs = 21632 + 0 + 0 + dense + 128 + dense_1;
  const TrainingFlops f = training_flops(ModelKind::kCnn, optimizer(OptimizerKind::kAdam));
  EXPECT_EQ(f.params, 693962u);
  EXPECT_DOUBLE_EQ(f.forward, forward);
  EXPECT_DOUBLE_EQ(f.backward, params + inputs);
  EXPECT_DOUBLE_EQ(f.backward, 3206922);
  EXPECT_DOUBLE_EQ(f.update, 12.0 * 693962);  // Adam
  // A replica's step at 64 examples: (forward + backward) x 64 + one update.
  EXPECT_DOUBLE_EQ(f.per_step(64), (1814368.0 + 3206922.0) * 64 + 12.0 * 693962);
}

TEST(TrainingFlops, TheMlpWorkedByHand) {
  // Flatten; Dense 784 -> 256 (200,704 multiply-adds); ReLU 256; Dense 256 -> 128 (32,768);
  // ReLU 128; Dense 128 -> 10 (1,280).
  const double d0 = 2 * 200704.0, d1 = 2 * 32768.0, d2 = 2 * 1280.0;
  const TrainingFlops f = training_flops(ModelKind::kMlp, optimizer(OptimizerKind::kSgd));
  EXPECT_EQ(f.params, 235146u);
  EXPECT_DOUBLE_EQ(f.forward, d0 + 256 + d1 + 128 + d2);
  EXPECT_DOUBLE_EQ(f.forward, 469888);
  EXPECT_DOUBLE_EQ(f.backward, 939786);
  // The first layer is the Flatten, so the first Dense's input gradient is computed (into
  // the Flatten's output gradient).
  const double params = (d0 + 256) + (d1 + 128) + (d2 + 10);
  const double inputs = d0 + 256 + d1 + 128 + d2;
  EXPECT_DOUBLE_EQ(f.backward, params + inputs);
  EXPECT_DOUBLE_EQ(f.update, 4.0 * 235146);  // SGD with momentum
}

TEST(TrainingFlops, TheUpdateCountsEachOptimizersArithmetic) {
  EXPECT_DOUBLE_EQ(update_flops_per_param(optimizer(OptimizerKind::kSgd, 0.0f)), 2);
  EXPECT_DOUBLE_EQ(update_flops_per_param(optimizer(OptimizerKind::kSgd)), 4);
  EXPECT_DOUBLE_EQ(update_flops_per_param(optimizer(OptimizerKind::kAdam)), 12);
  EXPECT_DOUBLE_EQ(update_flops_per_param(optimizer(OptimizerKind::kNadam)), 18);
}

}  // namespace
}  // namespace mirrorlab::core
