// Softmax cross-entropy and its metrics: a hand-computed example, finite differences, top-1 and
// top-5 counting, stability, bad labels and the empty shard.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/nn/loss.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {
namespace {

Tensor make_logits(vgpu::MemoryArena& arena, int batch, int classes,
                   const std::vector<float>& values) {
  Tensor t(arena, {batch, classes}, "logits");
  EXPECT_EQ(t.size(), values.size());
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

TEST(Loss, HandComputedExample) {
  // Row 0: logits (0, ln 2, 0): exp = (1, 2, 1), softmax = (1/4, 1/2, 1/4).
  // Label 1 -> loss ln 2; row 1 has the same logits and label 0 -> loss ln 4.
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  const float ln2 = std::log(2.0f);
  Tensor logits = make_logits(arena, 2, 3, {0, ln2, 0, 0, ln2, 0});
  const std::vector<std::uint8_t> labels = {1, 0};
  Tensor grad;
  // grad_scale = 1 / global batch; say the global batch is 4 (this shard holds 2 of them).
  const LossStats s = softmax_cross_entropy(logits, labels, 0.25f, &grad, &arena);
  EXPECT_NEAR(s.loss_sum, std::log(2.0) + std::log(4.0), 1e-6);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.correct, 1);       // argmax is 1 in both rows
  EXPECT_EQ(s.correct_top5, 2);  // only 3 classes: always in the top 5
  ASSERT_EQ(grad.shape(), (Shape{2, 3}));
  const float want[] = {0.25f * 0.25f,  0.25f * -0.5f, 0.25f * 0.25f,
                        0.25f * -0.75f, 0.25f * 0.5f,  0.25f * 0.25f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(grad.data()[i], want[i], 1e-7) << "at " << i;
}

TEST(Loss, GradientMatchesFiniteDifferences) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int batch = 3, classes = 10;
  std::vector<float> values(batch * classes);
  for (float& v : values) v = normal(rng);
  Tensor logits = make_logits(arena, batch, classes, values);
  const std::vector<std::uint8_t> labels = {3, 9, 0};
  const float scale = 1.0f / 8;  // global batch of 8
  Tensor grad;
  softmax_cross_entropy(logits, labels, scale, &grad, &arena);
  const float eps = 1e-3f;
  for (int i = 0; i < batch * classes; ++i) {
    const float saved = logits.data()[i];
    logits.data()[i] = saved + eps;
    const double plus = softmax_cross_entropy(logits, labels, 0, nullptr).loss_sum;
    logits.data()[i] = saved - eps;
    const double minus = softmax_cross_entropy(logits, labels, 0, nullptr).loss_sum;
    logits.data()[i] = saved;
    const double numeric = (plus - minus) / (2.0 * eps) * scale;
    EXPECT_NEAR(grad.data()[i], numeric, 1e-5 + 1e-3 * std::abs(numeric)) << "logit " << i;
  }
}

TEST(Loss, TopOneAndTopFive) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  // Every row: logits 0, 1, ..., 9 (class j has logit j).
  std::vector<float> values;
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 10; ++j) values.push_back(static_cast<float>(j));
  Tensor logits = make_logits(arena, 4, 10, values);
  // 9: top-1. 5: four beat it, top-5. 4: five beat it, not top-5. 0: neither.
  const LossStats s =
      softmax_cross_entropy(logits, std::vector<std::uint8_t>{9, 5, 4, 0}, 0, nullptr);
  EXPECT_EQ(s.correct, 1);
  EXPECT_EQ(s.correct_top5, 2);
}

TEST(Loss, TiesCountInTheLabelsFavourForTopFiveAndFirstMaxForTopOne) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor logits = make_logits(arena, 2, 10, std::vector<float>(20, 1.5f));
  const LossStats s = softmax_cross_entropy(logits, std::vector<std::uint8_t>{0, 7}, 0, nullptr);
  EXPECT_EQ(s.correct, 1);  // argmax of a tie is the first class
  EXPECT_EQ(s.correct_top5, 2);
  EXPECT_NEAR(s.loss_sum, 2 * std::log(10.0), 1e-9);
}

TEST(Loss, LargeLogitsAreStable) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor logits = make_logits(arena, 1, 3, {1000.0f, -1000.0f, 0.0f});
  Tensor grad;
  LossStats s = softmax_cross_entropy(logits, std::vector<std::uint8_t>{0}, 1, &grad, &arena);
  EXPECT_NEAR(s.loss_sum, 0.0, 1e-9);
  s = softmax_cross_entropy(logits, std::vector<std::uint8_t>{1}, 1, &grad, &arena);
  EXPECT_NEAR(s.loss_sum, 2000.0, 1e-6);
  EXPECT_TRUE(std::isfinite(grad.data()[0]));
  EXPECT_NEAR(grad.data()[0], 1.0f, 1e-6);
  EXPECT_NEAR(grad.data()[1], -1.0f, 1e-6);
}

TEST(Loss, LabelOutOfRangeThrowsNamingLabelAndClasses) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor logits = make_logits(arena, 2, 10, std::vector<float>(20, 0.0f));
  try {
    softmax_cross_entropy(logits, std::vector<std::uint8_t>{3, 12}, 1, nullptr);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("12"), std::string::npos) << what;
    EXPECT_NE(what.find("10 classes"), std::string::npos) << what;
  }
  EXPECT_THROW(softmax_cross_entropy(logits, std::vector<std::uint8_t>{3}, 1, nullptr),
               std::invalid_argument);  // one label for two rows
}

TEST(Loss, EmptyShard) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor logits(arena, {0, 10}, "logits");
  Tensor grad;
  const LossStats s = softmax_cross_entropy(logits, {}, 0.5f, &grad, &arena);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.loss_sum, 0.0);
  EXPECT_EQ(s.correct, 0);
  EXPECT_EQ(grad.shape(), (Shape{0, 10}));
}

TEST(Loss, GradientWithoutArenaUsesTheExistingBlock) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor logits = make_logits(arena, 1, 3, {0, 0, 0});
  Tensor grad(arena, {4, 3}, "grad");  // bigger than needed: reused in place
  softmax_cross_entropy(logits, std::vector<std::uint8_t>{2}, 1, &grad);
  EXPECT_EQ(grad.shape(), (Shape{1, 3}));
  EXPECT_NEAR(grad.data()[2], 1.0f / 3 - 1, 1e-6);
  Tensor small;  // no block and no arena: a programming error, reported
  EXPECT_THROW(softmax_cross_entropy(logits, std::vector<std::uint8_t>{2}, 1, &small),
               std::logic_error);
}

TEST(Loss, StatsAdd) {
  LossStats a{1.5, 2, 3, 4}, b{0.5, 1, 1, 2};
  a += b;
  EXPECT_EQ(a.loss_sum, 2.0);
  EXPECT_EQ(a.correct, 3);
  EXPECT_EQ(a.correct_top5, 4);
  EXPECT_EQ(a.count, 6);
}

}  // namespace
}  // namespace mirrorlab::core
