// The CUDA kernels' work per element (core/nn/kernel_elements*.h,
// virtualgpu/devices/collective_elements.h) run on the CPU over every index, against the CPU
// references (kernels_cpu.h) and the exact sums. This file is compiled by the C++ compiler in every
// build and, in a CUDA build, a second time by nvcc as host code (test_kernel_elements_nvcc.cu
// includes it), so the functions the kernels call are checked as both compilers build them. Bit for
// bit where the order of the sums is fixed: everything but the loss's sum over rows, whose block
// order differs from the reference's loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/kernel_elements.h"
#include "core/nn/kernel_elements_train.h"
#include "core/nn/loss.h"
#include "virtualgpu/devices/collective_elements.h"

namespace mirrorlab::testing {
namespace {

namespace el = core::elements;

std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Small integers: many ties (max pooling's first-maximum rule) and zeros (ReLU's edge).
std::vector<float> small_integers(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-2, 2);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(gen));
  return v;
}

// Bit for bit, -0 and +0 apart, NaN equal to itself; names the first element that differs.
::testing::AssertionResult same_bits(const std::vector<float>& got,
                                     const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " elements, " << want.size() << " wanted";
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << ", the reference " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(KernelElementsHarness, SameBitsTellsZerosApartAndNamesTheElement) {
  EXPECT_FALSE(same_bits({0.0f}, {-0.0f}));
  EXPECT_FALSE(same_bits({1.0f, 2.0f}, {1.0f, std::nextafter(2.0f, 3.0f)}));
  EXPECT_FALSE(same_bits({1.0f}, {1.0f, 1.0f}));
  EXPECT_TRUE(same_bits({std::nanf("")}, {std::nanf("")}));
}

// ---- element-wise -------------------------------------------------------------------------------
TEST(KernelElements, BroadcastRowsReluAndScaleAreTheReferencesBits) {
  for (const int cols : {1, 3, 10, 129}) {
    for (const int rows : {0, 1, 7}) {
      const std::vector<float> bias = random_floats(static_cast<std::size_t>(cols), 1);
      const std::size_t total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
      std::vector<float> want(total), got(total);
      core::broadcast_rows(bias.data(), rows, cols, want.data());
      for (std::size_t i = 0; i < total; ++i) got[i] = el::broadcast_rows_at(bias.data(), cols, i);
      EXPECT_TRUE(same_bits(got, want)) << rows << " x " << cols;
    }
  }
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{1000}}) {
    std::vector<float> x = small_integers(n, 2);
    if (n > 0) x[0] = -0.0f;
    const std::vector<float> dy = random_floats(n, 3);
    std::vector<float> want(n), got(n);
    core::relu_forward(x.data(), n, want.data());
    for (std::size_t i = 0; i < n; ++i) got[i] = el::relu_forward_at(x.data(), i);
    EXPECT_TRUE(same_bits(got, want)) << "relu forward, n = " << n;
    core::relu_backward(x.data(), dy.data(), n, want.data());
    for (std::size_t i = 0; i < n; ++i) got[i] = el::relu_backward_at(x.data(), dy.data(), i);
    EXPECT_TRUE(same_bits(got, want)) << "relu backward, n = " << n;
  }
  // scale_matrix: beta * C over an m x n block of a wider matrix (ldc > n); the reference is the
  // C := beta * C of gemm_reference with k = 0. Beta 0 overwrites NaN, as BLAS does.
  for (const float beta : {0.0f, 0.5f, -3.0f}) {
    const int m = 5, n = 3, ldc = 7;
    std::vector<float> c = random_floats(static_cast<std::size_t>(m) * ldc, 4);
    c[1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> want = c, got = c;
    core::gemm_reference(false, false, m, n, 0, 1.0f, nullptr, 1, nullptr, n, beta, want.data(),
                         ldc);
    for (std::size_t i = 0; i < static_cast<std::size_t>(m) * n; ++i) {
      float& v = got[el::strided_index(i, n, ldc)];
      v = el::scaled(v, beta);
    }
    EXPECT_TRUE(same_bits(got, want)) << "beta " << beta;
  }
}

// first_nonfinite on the GPU: every non-finite element bids its index, the least wins. Here the
// same bids, and their minimum, against the reference's scan.
TEST(KernelElements, TheFirstNonFiniteBidIsTheReferencesIndex) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(el::is_nonfinite(std::numeric_limits<float>::max()));
  EXPECT_FALSE(el::is_nonfinite(-std::numeric_limits<float>::max()));
  EXPECT_FALSE(el::is_nonfinite(std::numeric_limits<float>::denorm_min()));
  EXPECT_FALSE(el::is_nonfinite(-0.0f));
  EXPECT_TRUE(el::is_nonfinite(inf));
  EXPECT_TRUE(el::is_nonfinite(-inf));
  EXPECT_TRUE(el::is_nonfinite(nan));
  EXPECT_TRUE(el::is_nonfinite(-nan));
  for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{5000}}) {
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1, n}) {  // n: none
      for (const float bad : {inf, -inf, nan}) {
        std::vector<float> x = random_floats(n, 5, -1e38f, 1e38f);
        if (at < n) x[at] = bad;
        if (at + 3 < n) x[at + 3] = nan;  // a later bid must not win
        std::size_t least = n;
        for (std::size_t i = 0; i < n; ++i) {
          if (el::is_nonfinite(x[i]) && i < least) least = i;
        }
        EXPECT_EQ(least, core::first_nonfinite(x.data(), n)) << "n " << n << ", at " << at;
        EXPECT_EQ(least, at);
      }
    }
  }
}

// ---- convolution and pooling ----------------------------------------------------------------
struct ImageShape {
  int batch, h, w, c;
};
// Odd and even sizes, one channel and many, the smallest valid images.
const ImageShape kImages[] = {
    {1, 3, 3, 1}, {2, 5, 4, 3}, {3, 7, 6, 2}, {1, 28, 28, 1}, {2, 9, 11, 32}};

std::size_t count_of(const ImageShape& s) {
  return static_cast<std::size_t>(s.batch) * s.h * s.w * s.c;
}

TEST(KernelElements, Im2colAndCol2imAreTheReferencesBits) {
  for (const ImageShape& s : kImages) {
    SCOPED_TRACE(std::to_string(s.batch) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) +
                 "x" + std::to_string(s.c));
    const std::vector<float> x = random_floats(count_of(s), 6);
    const std::size_t cols_count =
        static_cast<std::size_t>(s.batch) * (s.h - 2) * (s.w - 2) * 9 * s.c;
    std::vector<float> want(cols_count), got(cols_count);
    core::im2col_3x3(x.data(), s.batch, s.h, s.w, s.c, want.data());
    for (std::size_t i = 0; i < cols_count; ++i)
      got[i] = x[el::im2col_3x3_source(i, s.h, s.w, s.c)];
    EXPECT_TRUE(same_bits(got, want)) << "im2col";

    // Random dcols: the sums round, so this checks the order of the additions too.
    const std::vector<float> dcols = random_floats(cols_count, 7);
    std::vector<float> dx_want(count_of(s)), dx_got(count_of(s));
    core::col2im_3x3(dcols.data(), s.batch, s.h, s.w, s.c, dx_want.data());
    for (std::size_t i = 0; i < dx_got.size(); ++i) {
      dx_got[i] = el::col2im_3x3_at(dcols.data(), i, s.h, s.w, s.c);
    }
    EXPECT_TRUE(same_bits(dx_got, dx_want)) << "col2im";
  }
}

TEST(KernelElements, MaxPoolingForwardAndBackwardAreTheReferencesBits) {
  for (const ImageShape& s : kImages) {
    SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c));
    const std::vector<float> x = small_integers(count_of(s), 8);  // ties in most windows
    const std::size_t out = static_cast<std::size_t>(s.batch) * (s.h / 2) * (s.w / 2) * s.c;
    std::vector<float> y_want(out), which_want(out), y_got(out), which_got(out);
    core::max_pool_2x2_forward(x.data(), s.batch, s.h, s.w, s.c, y_want.data(), which_want.data());
    for (std::size_t i = 0; i < out; ++i) {
      const el::PoolWinner best = el::max_pool_2x2_at(x.data(), i, s.h, s.w, s.c);
      y_got[i] = best.value;
      which_got[i] = best.at;
    }
    EXPECT_TRUE(same_bits(y_got, y_want)) << "forward";
    EXPECT_TRUE(same_bits(which_got, which_want)) << "forward's winners";

    const std::vector<float> dy = random_floats(out, 9);
    std::vector<float> dx_want(count_of(s)), dx_got(count_of(s));
    core::max_pool_2x2_backward(dy.data(), which_want.data(), s.batch, s.h, s.w, s.c,
                                dx_want.data());
    for (std::size_t i = 0; i < dx_got.size(); ++i) {
      dx_got[i] = el::max_pool_2x2_backward_at(dy.data(), which_want.data(), i, s.h, s.w, s.c);
    }
    EXPECT_TRUE(same_bits(dx_got, dx_want)) << "backward";
  }
}

// ---- the loss -----------------------------------------------------------------------------------
TEST(KernelElements, LossRowsAreTheReferencesBitsAndTheBlockSumAgrees) {
  const int classes = 10;
  for (const int batch : {0, 1, 5, 255, 256, 257, 1000}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const auto n = static_cast<std::size_t>(batch) * classes;
    std::vector<float> logits = random_floats(n, 10, -8.0f, 8.0f);
    if (batch > 1) {  // a tie with the label's logit (top-5 counts it in the label's favour)
      for (int j = 0; j < classes; ++j) logits[classes + j] = 1.0f;
    }
    std::vector<std::uint8_t> labels(static_cast<std::size_t>(batch));
    for (int r = 0; r < batch; ++r) labels[r] = static_cast<std::uint8_t>((r * 7) % classes);
    const float grad_scale = 1.0f / 3.0f;

    std::vector<float> grad_want(n), grad_got(n);
    core::LossStats want;
    core::softmax_cross_entropy_rows(logits.data(), labels.data(), batch, classes, grad_scale,
                                     grad_want.data(), &want);
    std::vector<el::LossRow> rows(static_cast<std::size_t>(batch));
    double sequential = 0;
    for (int r = 0; r < batch; ++r) {
      rows[r] = el::softmax_cross_entropy_row(logits.data(), labels.data(), r, classes, grad_scale,
                                              grad_got.data());
      sequential += rows[r].loss;
    }
    EXPECT_TRUE(same_bits(grad_got, grad_want)) << "gradient";
    // The rows summed in the reference's order give the reference's sum to the bit: each row's
    // loss is the reference's.
    EXPECT_EQ(sequential, want.loss_sum);

    const el::LossSums block = el::sum_loss_rows_as_the_block(rows.data(), batch);
    EXPECT_EQ(block.correct, want.correct);
    EXPECT_EQ(block.correct_top5, want.correct_top5);
    // Another order of the same double additions: equal to within their rounding.
    EXPECT_NEAR(block.loss_sum, want.loss_sum, 1e-12 * (1.0 + std::abs(want.loss_sum)));
  }
}

// The block's slices and tree count every row once: rows whose losses are exact in any order
// (multiples of 1/4, small) sum to the sequential sum to the bit, at every size around the
// block's 256 threads.
TEST(KernelElements, TheBlockSumTakesEveryRowOnce) {
  for (const int batch : {0, 1, 2, 255, 256, 257, 511, 512, 513, 4099}) {
    std::vector<el::LossRow> rows(static_cast<std::size_t>(batch));
    double loss = 0;
    long long correct = 0, top5 = 0;
    for (int r = 0; r < batch; ++r) {
      rows[r] = el::LossRow{0.25 * (r % 13 + 1), r % 3 == 0, r % 2 == 0};
      loss += rows[r].loss;
      correct += rows[r].correct;
      top5 += rows[r].top5;
    }
    const el::LossSums block = el::sum_loss_rows_as_the_block(rows.data(), batch);
    EXPECT_EQ(block.loss_sum, loss) << batch;
    EXPECT_EQ(block.correct, correct) << batch;
    EXPECT_EQ(block.correct_top5, top5) << batch;
  }
}

// ---- optimizers ---------------------------------------------------------------------------------
TEST(KernelElements, OptimizerUpdatesAreTheReferencesBits) {
  const std::size_t n = 4099;
  const std::vector<float> params = random_floats(n, 11), grads = random_floats(n, 12, -0.1f, 0.1f);
  const std::vector<float> m0 = random_floats(n, 13, -0.01f, 0.01f);
  const std::vector<float> v0 = random_floats(n, 14, 0.0f, 0.001f);
  {
    std::vector<float> want = params, got = params;
    core::sgd_update(want.data(), grads.data(), nullptr, n, 0.05f, 0.0f);
    for (std::size_t i = 0; i < n; ++i) el::sgd_at(got.data(), grads.data(), i, 0.05f);
    EXPECT_TRUE(same_bits(got, want)) << "sgd";
  }
  {
    std::vector<float> want = params, got = params, vel_want = m0, vel_got = m0;
    core::sgd_update(want.data(), grads.data(), vel_want.data(), n, 0.05f, 0.9f);
    for (std::size_t i = 0; i < n; ++i) {
      el::sgd_momentum_at(got.data(), grads.data(), vel_got.data(), i, 0.05f, 0.9f);
    }
    EXPECT_TRUE(same_bits(got, want)) << "sgd with momentum";
    EXPECT_TRUE(same_bits(vel_got, vel_want)) << "velocity";
  }
  {
    const core::AdamStep step{1e-3f * 0.3f, 0.9f, 0.999f, 1e-7f};
    std::vector<float> want = params, got = params, mw = m0, mg = m0, vw = v0, vg = v0;
    core::adam_update(want.data(), grads.data(), mw.data(), vw.data(), n, step);
    for (std::size_t i = 0; i < n; ++i)
      el::adam_at(got.data(), grads.data(), mg.data(), vg.data(), i, step);
    EXPECT_TRUE(same_bits(got, want)) << "adam";
    EXPECT_TRUE(same_bits(mg, mw)) << "adam m";
    EXPECT_TRUE(same_bits(vg, vw)) << "adam v";
  }
  {
    const core::NadamStep step{1e-3f, 0.9f, 0.999f, 1e-7f, 0.11f, 1.2f, 1.3f, 0.08f, 0.93f};
    std::vector<float> want = params, got = params, mw = m0, mg = m0, vw = v0, vg = v0;
    core::nadam_update(want.data(), grads.data(), mw.data(), vw.data(), n, step);
    for (std::size_t i = 0; i < n; ++i)
      el::nadam_at(got.data(), grads.data(), mg.data(), vg.data(), i, step);
    EXPECT_TRUE(same_bits(got, want)) << "nadam";
    EXPECT_TRUE(same_bits(mg, mw)) << "nadam m";
    EXPECT_TRUE(same_bits(vg, vw)) << "nadam v";
  }
}

// ---- the collectives ----------------------------------------------------------------------------
TEST(CollectiveElements, AddScaleAndCopyOverEveryIndex) {
  const std::size_t n = 37;
  const std::vector<float> a = random_floats(n, 15), b = random_floats(n, 16);
  std::vector<float> add = a, scale = a, copy = a;
  for (std::size_t i = 0; i < n; ++i) {
    vgpu::elementwise_at(vgpu::AddOp{}, add.data(), b.data(), i);
    vgpu::elementwise_at(vgpu::ScaleOp{0.25f}, scale.data(), scale.data(), i);
    vgpu::elementwise_at(vgpu::CopyOp{}, copy.data(), b.data(), i);
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(add[i], a[i] + b[i]);
    EXPECT_EQ(scale[i], a[i] * 0.25f);
    EXPECT_EQ(copy[i], b[i]);
  }
  // A copy never reads its destination, a scale never its source: NaN there changes nothing.
  std::vector<float> dst(1, std::nanf("")), src(1, std::nanf(""));
  vgpu::elementwise_at(vgpu::CopyOp{}, dst.data(), b.data(), 0);
  EXPECT_EQ(dst[0], b[0]);
  std::vector<float> x(1, 2.0f);
  vgpu::elementwise_at(vgpu::ScaleOp{3.0f}, x.data(), src.data(), 0);
  EXPECT_EQ(x[0], 6.0f);
}

// Small integers: any order of the sums is exact, so every rank must hold the exact sum.
template <int kRanks>
void check_one_shot(int ranks, std::size_t n) {
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(ranks), std::vector<float>(n));
  vgpu::OneShotBuffers b;
  b.n = ranks;
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < n; ++i) buffers[r][i] = static_cast<float>((r + 1) * (1 + i % 7));
    b.data[r] = buffers[r].data();
  }
  for (std::size_t i = 0; i < n; ++i) vgpu::one_shot_at<kRanks>(b, i);
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(buffers[r][i], static_cast<float>(ranks * (ranks + 1) / 2 * (1 + i % 7)))
          << ranks << " ranks (kernel " << kRanks << "), rank " << r << ", element " << i;
    }
  }
}

template <int... kRanks>
void check_unrolled(std::integer_sequence<int, kRanks...>, std::size_t n) {
  (check_one_shot<kRanks + 1>(kRanks + 1, n), ...);
}

TEST(CollectiveElements, TheOneShotSumsEveryRankIntoEveryBufferForEveryKernelOfTheTable) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1027}}) {
    // Each unrolled kernel (1..8 ranks), and the run-time one at 1, 9, 33 and 64 ranks.
    check_unrolled(std::make_integer_sequence<int, vgpu::kUnrolledOneShotRanks>{}, n);
    for (const int ranks : {1, 9, 33, vgpu::kMaxOneShotRanks}) check_one_shot<0>(ranks, n);
  }
}

// The order of the one-shot's sum is rank order: with values whose sum rounds, rank order's
// result and no other.
TEST(CollectiveElements, TheOneShotAddsInRankOrder) {
  std::vector<float> r0{1.0f}, r1{1e-8f}, r2{-1.0f};
  vgpu::OneShotBuffers b;
  b.n = 3;
  b.data[0] = r0.data();
  b.data[1] = r1.data();
  b.data[2] = r2.data();
  vgpu::one_shot_at<3>(b, 0);
  const float in_rank_order = (1.0f + 1e-8f) + -1.0f;  // 0: 1e-8 is lost against 1
  EXPECT_EQ(r0[0], in_rank_order);
  EXPECT_EQ(r2[0], in_rank_order);
  EXPECT_NE(in_rank_order, (1.0f + -1.0f) + 1e-8f);
}

}  // namespace
}  // namespace mirrorlab::testing
