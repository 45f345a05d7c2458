// Kernels and layers of one replica, checked against plain references and finite differences.
//
// Index
//   1. Helpers: tolerance check that reports the first mismatch, random fills
//   2. GEMM: gemm (OpenBLAS or reference) and gemm_reference against a double-precision product
//   3. im2col / col2im: layout and adjointness
//   4. Layers: forward against direct loops, backward against central finite differences,
//      batch 0, shape errors
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/layers.h"
#include "core/nn/tensor.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {
namespace {

// ---------------------------------------------------------------------------------------------
// 1. Helpers
// ---------------------------------------------------------------------------------------------

// llm.c-style check: |got - want| <= atol + rtol * |want| everywhere; the first mismatch is
// reported with its index and both values, and the count of all mismatches.
::testing::AssertionResult all_close(const std::vector<double>& got,
                                     const std::vector<double>& want, double atol, double rtol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  }
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  char text[200];
  std::snprintf(text, sizeof text, "%zu of %zu values differ; first at [%zu]: got %.9g, want %.9g",
                bad, got.size(), first, got[first], want[first]);
  return ::testing::AssertionFailure() << text;
}

std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Values in [-1, 1] kept at least `gap` away from 0 (no ReLU kink within a finite-difference step).
std::vector<float> random_away_from_zero(std::size_t n, std::mt19937& rng, float gap) {
  std::vector<float> v = random_floats(n, rng, gap, 1.0f);
  std::bernoulli_distribution sign(0.5);
  for (float& x : v) x = sign(rng) ? x : -x;
  return v;
}

// Distinct values at least 0.1 apart in random order (no max-pool ties within a step).
std::vector<float> random_distinct(std::size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(i) - 0.05f * n;
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

void fill(Tensor& t, const std::vector<float>& values) {
  ASSERT_EQ(t.size(), values.size());
  std::copy(values.begin(), values.end(), t.data());
}

std::vector<double> as_double(std::span<const float> v) { return {v.begin(), v.end()}; }

// ---------------------------------------------------------------------------------------------
// 2. GEMM
// ---------------------------------------------------------------------------------------------
struct GemmCase {
  int m, n, k;
  float alpha, beta;
};

// C = alpha op(A) op(B) + beta C in double (beta == 0 ignores C, as BLAS does).
std::vector<double> gemm_double(bool ta, bool tb, const GemmCase& g, const std::vector<float>& a,
                                int lda, const std::vector<float>& b, int ldb,
                                const std::vector<float>& c, int ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int i = 0; i < g.m; ++i) {
    for (int j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int p = 0; p < g.k; ++p) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
      }
      const double old = g.beta == 0 ? 0.0 : g.beta * static_cast<double>(c[i * ldc + j]);
      out[i * ldc + j] = g.alpha * sum + old;
    }
  }
  return out;
}

TEST(Gemm, MatchesDoublePrecisionForAllTransposesSizesAndScalars) {
  const GemmCase cases[] = {
      {1, 1, 1, 1, 0},     {7, 13, 5, 1, 0},     {5, 3, 17, 0.5f, 2}, {33, 17, 65, -1.5f, 1},
      {64, 10, 128, 1, 0}, {3, 100, 9, 2, 0.5f}, {0, 4, 3, 1, 0},     {4, 0, 3, 1, 0},
      {4, 3, 0, 1, 0},     {4, 3, 0, 1, 0.5f},   {4, 3, 0, 2, 1},     {50, 70, 31, 1, 1},
  };
  std::mt19937 rng(7);
  for (const GemmCase& g : cases) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        // Row strides with padding (stride > row length) to exercise lda/ldb/ldc.
        const int a_rows = ta ? g.k : g.m, a_cols = ta ? g.m : g.k;
        const int b_rows = tb ? g.n : g.k, b_cols = tb ? g.k : g.n;
        const int lda = a_cols + 3, ldb = b_cols + 2, ldc = g.n + 1;
        const auto a = random_floats(static_cast<std::size_t>(std::max(a_rows, 1)) * lda, rng);
        const auto b = random_floats(static_cast<std::size_t>(std::max(b_rows, 1)) * ldb, rng);
        auto c0 = random_floats(static_cast<std::size_t>(std::max(g.m, 1)) * ldc, rng);
        // beta == 0 must overwrite C, NaN included.
        if (g.beta == 0) std::fill(c0.begin(), c0.end(), std::numeric_limits<float>::quiet_NaN());
        const auto want = gemm_double(ta, tb, g, a, lda, b, ldb, c0, ldc);
        const double atol = 1e-5 * (g.k + 1), rtol = 1e-5;
        const std::string where =
            "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
            " trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb) +
            " alpha=" + std::to_string(g.alpha) + " beta=" + std::to_string(g.beta);
        // Compare the m x n result; the padding columns of C (j >= n) must keep their bits.
        const auto check = [&](const std::vector<float>& c, const char* who) {
          std::vector<double> got_mn, want_mn;
          for (int i = 0; i < g.m; ++i) {
            for (int j = 0; j < g.n; ++j) {
              got_mn.push_back(c[i * ldc + j]);
              want_mn.push_back(want[i * ldc + j]);
            }
            for (int j = g.n; j < ldc; ++j) {
              EXPECT_EQ(std::memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float)), 0)
                  << who << " wrote into the padding of C, " << where;
            }
          }
          EXPECT_TRUE(all_close(got_mn, want_mn, atol, rtol)) << who << ", " << where;
        };
        auto c = c0;
        gemm_reference(ta, tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta,
                       c.data(), ldc);
        check(c, "gemm_reference");
        c = c0;
        gemm(ta, tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);
        check(c, have_blas() ? "gemm (OpenBLAS)" : "gemm (reference build)");
      }
    }
  }
}

TEST(Gemm, ZeroSizesLeaveOtherMemoryAlone) {
  // m == 0 or n == 0: nothing is written, null pointers are fine.
  gemm(false, false, 0, 5, 5, 1, nullptr, 5, nullptr, 5, 0, nullptr, 5);
  gemm(true, true, 5, 0, 5, 1, nullptr, 5, nullptr, 5, 0, nullptr, 5);
  // k == 0, beta == 0 (the weight gradient of an empty shard): C becomes exactly 0.
  std::vector<float> c(6, std::numeric_limits<float>::quiet_NaN());
  gemm(true, false, 2, 3, 0, 1, nullptr, 2, nullptr, 3, 0, c.data(), 3);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST(Gemm, BlasSingleThreadedIsCallable) {
  set_blas_single_threaded();
  std::printf("gemm backend: %s\n", have_blas() ? "OpenBLAS" : "reference");
}

// ---------------------------------------------------------------------------------------------
// 3. im2col / col2im
// ---------------------------------------------------------------------------------------------
TEST(Im2col, LayoutIsRowPerOutputPixelColumnPerTap) {
  const int batch = 2, h = 4, w = 5, c = 3, oh = 2, ow = 3;
  std::vector<float> x(batch * h * w * c);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<float> cols(batch * oh * ow * 9 * c);
  im2col_3x3(x.data(), batch, h, w, c, cols.data());
  for (int b = 0; b < batch; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx)
            for (int ci = 0; ci < c; ++ci) {
              const int row = (b * oh + oy) * ow + ox, col = (ky * 3 + kx) * c + ci;
              const float want = x[((b * h + oy + ky) * w + ox + kx) * c + ci];
              ASSERT_EQ(cols[row * 9 * c + col], want)
                  << "b=" << b << " oy=" << oy << " ox=" << ox << " ky=" << ky << " kx=" << kx;
            }
}

TEST(Im2col, Col2imIsTheAdjoint) {
  // <col2im(y), x> == <y, im2col(x)> for random x and y: col2im scatters exactly where im2col
  // gathers (and zeroes dx first: it starts from garbage here).
  std::mt19937 rng(3);
  const int batch = 2, h = 6, w = 7, c = 3, rows = batch * 4 * 5, k = 9 * c;
  const auto x = random_floats(batch * h * w * c, rng);
  const auto y = random_floats(rows * k, rng);
  std::vector<float> cols(rows * k), dx(x.size(), 123.0f);
  im2col_3x3(x.data(), batch, h, w, c, cols.data());
  col2im_3x3(y.data(), batch, h, w, c, dx.data());
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) lhs += double(dx[i]) * x[i];
  for (std::size_t i = 0; i < y.size(); ++i) rhs += double(y[i]) * cols[i];
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(rhs) + 1e-4);
}

// ---------------------------------------------------------------------------------------------
// 4. Layers
// ---------------------------------------------------------------------------------------------

// A layer bound to its own parameter and gradient vectors, as a model would bind it.
struct Bound {
  Bound(std::unique_ptr<Layer> l, Shape input)
      : layer(std::move(l)), input_shape(std::move(input)) {
    std::size_t n = 0;
    for (const ParamSpec& s : layer->param_specs(input_shape)) n += shape_size(s.shape);
    params.assign(n, 0.0f);
    grads.assign(n, std::numeric_limits<float>::quiet_NaN());
    layer->bind(input_shape, params, grads, arena);
  }
  Shape batched(int batch) const {
    Shape s = input_shape;
    s.insert(s.begin(), batch);
    return s;
  }
  vgpu::MemoryArena arena{"test:0", 64 * vgpu::kMiB};
  std::unique_ptr<Layer> layer;
  Shape input_shape;
  std::vector<float> params, grads;
};

// Scalar loss L = sum(output * r) with fixed random r, so dL/d(output) = r (a random upstream
// gradient). Computed in double from the float output.
double weighted_sum(const Tensor& out, const std::vector<float>& r) {
  double sum = 0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += double(out.data()[i]) * r[i];
  return sum;
}

// Checks backward() of a bound layer against central differences, for every parameter and
// every input element. The layers are piecewise linear, so with inputs kept more than `eps` away
// from kinks the differences are exact up to float rounding of the outputs, and the tolerance
// can be tight (a gradient 1% off fails).
void check_gradients(Bound& t, int batch, const std::vector<float>& x_values, float eps = 0.04f,
                     double atol = 2e-4, double rtol = 2e-3) {
  std::mt19937 rng(11);
  Tensor x(t.arena, t.batched(batch), "x");
  fill(x, x_values);
  const Tensor& out0 = t.layer->forward(x);
  Tensor dy(t.arena, out0.shape(), "dy");
  const auto r = random_floats(out0.size(), rng);
  fill(dy, r);
  Tensor dx;
  t.layer->backward(x, dy, &dx);
  ASSERT_EQ(dx.shape(), x.shape());
  const std::vector<double> analytic_params = as_double(t.grads);
  const std::vector<double> analytic_input = as_double(dx.span());

  std::vector<double> numeric_params(t.params.size()), numeric_input(x.size());
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    const float saved = t.params[i];
    t.params[i] = saved + eps;
    const double plus = weighted_sum(t.layer->forward(x), r);
    t.params[i] = saved - eps;
    const double minus = weighted_sum(t.layer->forward(x), r);
    t.params[i] = saved;
    numeric_params[i] = (plus - minus) / (2.0 * eps);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x.data()[i];
    x.data()[i] = saved + eps;
    const double plus = weighted_sum(t.layer->forward(x), r);
    x.data()[i] = saved - eps;
    const double minus = weighted_sum(t.layer->forward(x), r);
    x.data()[i] = saved;
    numeric_input[i] = (plus - minus) / (2.0 * eps);
  }
  EXPECT_TRUE(all_close(analytic_params, numeric_params, atol, rtol)) << "parameter gradients";
  EXPECT_TRUE(all_close(analytic_input, numeric_input, atol, rtol)) << "input gradients";

  // Backward without grad_input still gives the same parameter gradients.
  t.layer->forward(x);
  std::fill(t.grads.begin(), t.grads.end(), std::numeric_limits<float>::quiet_NaN());
  t.layer->backward(x, dy, nullptr);
  EXPECT_TRUE(all_close(as_double(t.grads), analytic_params, 1e-6, 1e-6))
      << "grad_input == nullptr";
}

// Batch 0: output [0, ...], parameter gradients exactly 0 (a replica with an empty shard).
void check_empty_batch(Bound& t) {
  Tensor x(t.arena, t.batched(0), "x");
  const Tensor& out = t.layer->forward(x);
  Shape want = t.layer->output_shape(t.input_shape);
  want.insert(want.begin(), 0);
  EXPECT_EQ(out.shape(), want);
  EXPECT_EQ(out.size(), 0u);
  Tensor dy(t.arena, out.shape(), "dy"), dx;
  t.layer->backward(x, dy, &dx);
  EXPECT_EQ(dx.shape(), x.shape());
  for (float g : t.grads) EXPECT_EQ(g, 0.0f);
}

TEST(DenseLayer, ShapesAndParameters) {
  auto dense = make_dense("dense", 5);
  EXPECT_EQ(dense->type(), "Dense");
  EXPECT_EQ(dense->output_shape({7}), (Shape{5}));
  const auto specs = dense->param_specs({7});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "kernel");
  EXPECT_EQ(specs[0].shape, (Shape{7, 5}));
  EXPECT_EQ(specs[1].name, "bias");
  EXPECT_EQ(specs[1].shape, (Shape{5}));
  try {
    dense->output_shape({3, 3, 2});
    FAIL() << "Dense accepted an image";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dense"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3, 3, 2)"), std::string::npos) << e.what();
  }
}

TEST(DenseLayer, ForwardIsXTimesKernelPlusBias) {
  Bound t(make_dense("dense", 4), {3});
  std::mt19937 rng(1);
  t.params = random_floats(t.params.size(), rng);
  t.layer->bind(t.input_shape, t.params, t.grads, t.arena);
  Tensor x(t.arena, {2, 3}, "x");
  fill(x, random_floats(6, rng));
  const Tensor& y = t.layer->forward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  std::vector<double> want(8);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 4; ++j) {
      double s = t.params[12 + j];
      for (int i = 0; i < 3; ++i) s += double(x.data()[b * 3 + i]) * t.params[i * 4 + j];
      want[b * 4 + j] = s;
    }
  EXPECT_TRUE(all_close(as_double(y.span()), want, 1e-6, 1e-5));
}

TEST(DenseLayer, BackwardMatchesFiniteDifferences) {
  Bound t(make_dense("dense", 5), {7});
  std::mt19937 rng(2);
  std::copy_n(random_floats(t.params.size(), rng).begin(), t.params.size(), t.params.begin());
  check_gradients(t, 3, random_floats(3 * 7, rng));
}

TEST(DenseLayer, EmptyBatch) {
  Bound t(make_dense("dense", 5), {7});
  check_empty_batch(t);
}

TEST(DenseLayer, GlorotUniformKernelZeroBias) {
  Bound t(make_dense("dense", 300), {200});
  std::fill(t.params.begin(), t.params.end(), 9.0f);
  std::mt19937_64 rng(5);
  t.layer->init_params(rng, t.params);
  const float limit = std::sqrt(6.0f / 500.0f);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < 200 * 300; ++i) {
    ASSERT_GE(t.params[i], -limit);
    ASSERT_LT(t.params[i], limit);
    sum += t.params[i];
    sum_sq += double(t.params[i]) * t.params[i];
  }
  for (int i = 200 * 300; i < 200 * 300 + 300; ++i) ASSERT_EQ(t.params[i], 0.0f);
  // Uniform on [-l, l): mean 0, variance l^2 / 3.
  const double n = 200 * 300;
  EXPECT_NEAR(sum / n, 0.0, 0.01 * limit);
  EXPECT_NEAR(sum_sq / n, limit * limit / 3.0, 0.02 * limit * limit);
}

TEST(Conv2DLayer, ShapesAndParameters) {
  auto conv = make_conv2d_3x3("conv2d", 32);
  EXPECT_EQ(conv->type(), "Conv2D");
  EXPECT_EQ(conv->output_shape({28, 28, 1}), (Shape{26, 26, 32}));
  const auto specs = conv->param_specs({28, 28, 1});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, (Shape{3, 3, 1, 32}));
  EXPECT_EQ(specs[1].shape, (Shape{32}));
  EXPECT_THROW(conv->output_shape({2, 5, 1}), std::invalid_argument);
  EXPECT_THROW(conv->output_shape({784}), std::invalid_argument);
}

TEST(Conv2DLayer, ForwardMatchesDirectConvolution) {
  const int batch = 2, h = 6, w = 5, c = 2, f = 3, oh = 4, ow = 3;
  Bound t(make_conv2d_3x3("conv2d", f), {h, w, c});
  std::mt19937 rng(4);
  t.params = random_floats(t.params.size(), rng);
  t.layer->bind(t.input_shape, t.params, t.grads, t.arena);
  Tensor x(t.arena, {batch, h, w, c}, "x");
  fill(x, random_floats(x.size(), rng));
  const Tensor& y = t.layer->forward(x);
  ASSERT_EQ(y.shape(), (Shape{batch, oh, ow, f}));
  std::vector<double> want(y.size());
  const float* kernel = t.params.data();  // HWIO: [ky][kx][ci][fo]
  const float* bias = kernel + 9 * c * f;
  for (int b = 0; b < batch; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int fo = 0; fo < f; ++fo) {
          double s = bias[fo];
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx)
              for (int ci = 0; ci < c; ++ci)
                s += double(x.data()[((b * h + oy + ky) * w + ox + kx) * c + ci]) *
                     kernel[((ky * 3 + kx) * c + ci) * f + fo];
          want[((b * oh + oy) * ow + ox) * f + fo] = s;
        }
  EXPECT_TRUE(all_close(as_double(y.span()), want, 1e-5, 1e-5));
}

TEST(Conv2DLayer, BackwardMatchesFiniteDifferences) {
  Bound t(make_conv2d_3x3("conv2d", 3), {6, 5, 2});
  std::mt19937 rng(5);
  std::copy_n(random_floats(t.params.size(), rng).begin(), t.params.size(), t.params.begin());
  check_gradients(t, 2, random_floats(2 * 6 * 5 * 2, rng));
}

TEST(Conv2DLayer, EmptyBatch) {
  Bound t(make_conv2d_3x3("conv2d", 3), {6, 5, 2});
  check_empty_batch(t);
}

TEST(Conv2DLayer, SmallerBatchReusesMemory) {
  Bound t(make_conv2d_3x3("conv2d", 4), {8, 8, 2});
  Tensor x8(t.arena, t.batched(8), "x8"), x3(t.arena, t.batched(3), "x3");
  t.layer->forward(x8);
  const std::size_t in_use = t.arena.in_use();
  EXPECT_EQ(t.layer->forward(x3).shape(), (Shape{3, 6, 6, 4}));
  EXPECT_EQ(t.arena.in_use(), in_use);
}

TEST(MaxPool2DLayer, ShapesFloorOddSizes) {
  auto pool = make_max_pool_2x2("max_pooling2d");
  EXPECT_EQ(pool->type(), "MaxPooling2D");
  EXPECT_EQ(pool->output_shape({26, 26, 32}), (Shape{13, 13, 32}));
  EXPECT_EQ(pool->output_shape({5, 7, 3}), (Shape{2, 3, 3}));
  EXPECT_TRUE(pool->param_specs({5, 7, 3}).empty());
  EXPECT_THROW(pool->output_shape({1, 7, 3}), std::invalid_argument);
}

TEST(MaxPool2DLayer, ForwardAndTiesGoToTheFirstMaximum) {
  Bound t(make_max_pool_2x2("max_pooling2d"), {2, 2, 2});
  Tensor x(t.arena, {1, 2, 2, 2}, "x");
  // channel 0: window (1, 4, 4, 2) -> 4, first at position 1; channel 1: all 7 -> position 0.
  fill(x, {1, 7, 4, 7, 4, 7, 2, 7});
  const Tensor& y = t.layer->forward(x);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(y.data()[0], 4.0f);
  EXPECT_EQ(y.data()[1], 7.0f);
  Tensor dy(t.arena, y.shape(), "dy"), dx;
  fill(dy, {10, 20});
  t.layer->backward(x, dy, &dx);
  EXPECT_EQ(std::vector<float>(dx.data(), dx.data() + 8),
            (std::vector<float>{0, 20, 10, 0, 0, 0, 0, 0}));
}

TEST(MaxPool2DLayer, BackwardMatchesFiniteDifferences) {
  Bound t(make_max_pool_2x2("max_pooling2d"), {5, 7, 3});
  std::mt19937 rng(6);
  check_gradients(t, 2, random_distinct(2 * 5 * 7 * 3, rng));
}

TEST(MaxPool2DLayer, EmptyBatch) {
  Bound t(make_max_pool_2x2("max_pooling2d"), {5, 7, 3});
  check_empty_batch(t);
}

TEST(ReluLayer, ForwardAndBackward) {
  Bound t(make_relu("re_lu"), {4, 3});
  EXPECT_EQ(t.layer->type(), "ReLU");
  EXPECT_EQ(t.layer->output_shape({4, 3}), (Shape{4, 3}));
  std::mt19937 rng(8);
  const auto x_values = random_away_from_zero(2 * 4 * 3, rng, 0.1f);
  Tensor x(t.arena, {2, 4, 3}, "x");
  fill(x, x_values);
  const Tensor& y = t.layer->forward(x);
  for (std::size_t i = 0; i < x_values.size(); ++i) {
    EXPECT_EQ(y.data()[i], std::max(x_values[i], 0.0f));
  }
  check_gradients(t, 2, x_values);
}

TEST(ReluLayer, EmptyBatch) {
  Bound t(make_relu("re_lu"), {4, 3});
  check_empty_batch(t);
}

TEST(FlattenLayer, ReshapesAndPassesGradientsThrough) {
  Bound t(make_flatten("flatten"), {3, 2, 2});
  EXPECT_EQ(t.layer->type(), "Flatten");
  EXPECT_EQ(t.layer->output_shape({3, 2, 2}), (Shape{12}));
  std::mt19937 rng(9);
  const auto x_values = random_floats(2 * 12, rng);
  Tensor x(t.arena, {2, 3, 2, 2}, "x");
  fill(x, x_values);
  const Tensor& y = t.layer->forward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_TRUE(std::equal(x_values.begin(), x_values.end(), y.data()));
  check_gradients(t, 2, x_values);
}

TEST(FlattenLayer, EmptyBatch) {
  Bound t(make_flatten("flatten"), {3, 2, 2});
  check_empty_batch(t);
}

TEST(Layer, WrongInputShapeAtRunTimeNamesTheLayer) {
  Bound t(make_dense("dense_1", 4), {3});
  Tensor x(t.arena, {2, 5}, "x");
  try {
    t.layer->forward(x);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dense_1"), std::string::npos) << e.what();
  }
}

TEST(Layer, TensorEnsureReusesAndGrowsBlocks) {
  vgpu::MemoryArena arena("test:0", vgpu::kMiB);
  Tensor t(arena, {4, 10}, "t");
  EXPECT_EQ(arena.in_use(), 160u);
  t.ensure(arena, {2, 10}, "t");
  EXPECT_EQ(t.size(), 20u);
  EXPECT_EQ(arena.in_use(), 160u);  // kept the block
  t.ensure(arena, {8, 10}, "t");
  EXPECT_EQ(arena.in_use(), 320u);  // the old block went back first
  t.ensure({5, 10}, "t");
  EXPECT_EQ(t.shape(), (Shape{5, 10}));
  EXPECT_THROW(t.ensure({9, 10}, "t"), std::logic_error);
  t.reshape({50});
  EXPECT_THROW(t.reshape({49}), std::invalid_argument);
  EXPECT_EQ(shape_to_string({64, 26, 26, 32}), "(64, 26, 26, 32)");
  EXPECT_EQ(shape_to_string({10}), "(10,)");
}

}  // namespace
}  // namespace mirrorlab::core
