// Kernel agreement tests, shared by CpuOps (test_ops) and CudaOps (test_ops_cuda): the kernel
// under test runs on its device with inputs copied there; the CPU reference runs on the host on
// the same inputs; the outputs must agree to a relative error below 1e-4, measured against the
// magnitude of the terms summed (|A||B| for a product), so cancellation does not make an honest
// float result look wrong. Sizes are odd, pointers misaligned by a float where it matters, and
// empty batches included.
#include "tests/support/ops_agreement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/cuda/gpu_model_api.h"
#include "core/nn/cuda/ops_cuda.h"
#include "core/nn/loss.h"
#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "tests/support/cuda/cuda_test_devices.h"
#ifdef MIRRORLAB_OPS_FAKE_CUDA
#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_gpu_model_api.h"
#endif

namespace mirrorlab::testing {

using core::LossStats;

// ---------------------------------------------------------------------------------------------
// Targets and buffers
// ---------------------------------------------------------------------------------------------
namespace {

struct CpuTarget : OpsTarget {
  CpuTarget() {
    ops = &core::cpu_ops();
    arena = &memory;
  }
  vgpu::MemoryArena memory{"test:cpu", 512 * vgpu::kMiB};
};

struct CudaTarget : OpsTarget {
  CudaTarget() : devices(1, 2048) {
    vgpu::Device& d = *devices.devices()[0];
    own_ops = core::make_cuda_ops(*d.cuda_api(), core::runtime_gpu_model_api(), d.cuda_ordinal(),
                                  d.cuda_stream(), d.memory());
    ops = own_ops.get();
    arena = &d.memory();
  }
  ~CudaTarget() override { own_ops.reset(); }  // before the devices (its scratch is theirs)
  CudaTestDevices devices;
  std::unique_ptr<core::Ops> own_ops;
};

#ifdef MIRRORLAB_OPS_FAKE_CUDA
// CudaOps itself, over the fake runtime and the fake model kernels (test_ops_fake_cuda): every
// call checked as CUDA and cuBLAS would check it, nothing left alive at the end.
struct FakeCudaTarget : OpsTarget {
  FakeCudaTarget() : api(options()), model(api), devices(api, {0}, std::size_t{512} << 20) {
    vgpu::Device& d = *devices.devices()[0];
    before = api.live_handles();
    own_ops = core::make_cuda_ops(api, model, d.cuda_ordinal(), d.cuda_stream(), d.memory());
    ops = own_ops.get();
    arena = &d.memory();
  }
  ~FakeCudaTarget() override {
    own_ops.reset();
    // Its events, pinned memory and handle are gone (its scratch is the arena's until the device
    // goes).
    EXPECT_EQ(api.live_handles(), before);
    EXPECT_TRUE(model.leaks().empty()) << ::testing::PrintToString(model.leaks());
    EXPECT_TRUE(model.violations().empty()) << ::testing::PrintToString(model.violations());
    EXPECT_TRUE(api.violations().empty()) << ::testing::PrintToString(api.violations());
  }
  static FakeCudaApi::Options options() {
    FakeCudaApi::Options o;
    o.bytes_per_gpu = std::size_t{1} << 30;
    return o;
  }
  FakeCudaApi api;
  FakeGpuModelApi model;
  std::vector<std::string> before;  // alive before CudaOps was made (the device's stream)
  FakeCudaDevices devices;
  std::unique_ptr<core::Ops> own_ops;
};
#endif

}  // namespace

std::unique_ptr<OpsTarget> make_ops_target(const std::string& name, std::string* why) {
  if (name == "cpu") return std::make_unique<CpuTarget>();
#ifdef MIRRORLAB_OPS_FAKE_CUDA
  if (name == "fake-cuda") return std::make_unique<FakeCudaTarget>();
#endif
  if (vgpu::visible_cuda_gpus(why) == 0) return nullptr;
  return std::make_unique<CudaTarget>();
}

DeviceFloats::DeviceFloats(OpsTarget& target, std::span<const float> host, const char* what)
    : ops_(target.ops), size_(host.size()) {
  alloc_ = target.arena->allocate(host.size_bytes(), what);
  if (size_ > 0) ops_->copy_to_device(alloc_.data(), host.data(), host.size_bytes());
}

std::vector<float> DeviceFloats::to_host() const {
  std::vector<float> host(size_);
  if (size_ > 0) ops_->copy_to_host(host.data(), alloc_.data(), size_ * sizeof(float));
  return host;
}

void OpsAgreement::SetUp() {
  std::string why;
  target_ = make_ops_target(GetParam(), &why);
  if (!target_) GTEST_SKIP() << why;
}

namespace {

constexpr double kRelative = 1e-4;

std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> abs_of(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

}  // namespace

::testing::AssertionResult agree(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::vector<float>& magnitude) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double m = magnitude.empty() ? 0.0 : std::abs(double{magnitude[i]});
    const double tolerance = kRelative * (std::abs(double{want[i]}) + m);
    if (!(std::abs(double{got[i]} - double{want[i]}) <= tolerance)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", reference " << want[i] << " (tolerance "
             << tolerance << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, GemmAllTransposesOddSizesPaddedStridesMisalignedPointers) {
  std::mt19937 rng(1);
  struct Size {
    int m, n, k;
  };
  for (const Size s : {Size{37, 19, 53}, Size{1, 1, 1}, Size{64, 128, 288}, Size{5, 3, 0}}) {
    for (int t = 0; t < 4; ++t) {
      for (const float beta : {0.0f, 1.0f, 0.5f}) {
        const bool ta = t & 1, tb = t & 2;
        // Stored shapes, rows padded by 3 floats; the +1 offsets make the pointers misaligned.
        const int a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k, lda = a_cols + 3;
        const int b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n, ldb = b_cols + 3;
        const int ldc = s.n + 3;
        const auto a = random_floats(1 + static_cast<std::size_t>(a_rows) * lda, rng);
        const auto b = random_floats(1 + static_cast<std::size_t>(b_rows) * ldb, rng);
        const auto c = random_floats(1 + static_cast<std::size_t>(s.m) * ldc, rng);
        const float alpha = 0.75f;
        std::vector<float> want = c, magnitude = abs_of(c);
        core::gemm_reference(ta, tb, s.m, s.n, s.k, alpha, a.data() + 1, lda, b.data() + 1, ldb,
                             beta, want.data() + 1, ldc);
        const auto abs_a = abs_of(a), abs_b = abs_of(b);
        core::gemm_reference(ta, tb, s.m, s.n, s.k, alpha, abs_a.data() + 1, lda, abs_b.data() + 1,
                             ldb, std::abs(beta), magnitude.data() + 1, ldc);
        DeviceFloats da = upload(a), db = upload(b), dc = upload(c);
        ops().gemm(ta, tb, s.m, s.n, s.k, alpha, da.data() + 1, lda, db.data() + 1, ldb, beta,
                   dc.data() + 1, ldc);
        EXPECT_TRUE(agree(dc.to_host(), want, magnitude))
            << "m=" << s.m << " n=" << s.n << " k=" << s.k << " trans_a=" << ta << " trans_b=" << tb
            << " beta=" << beta;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bias broadcast, column sums, ReLU
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, BroadcastRowsAndColumnSums) {
  std::mt19937 rng(2);
  const int cols = 33;
  const auto bias = random_floats(cols, rng);
  for (const int rows : {0, 1, 77, 1030}) {
    std::vector<float> want(static_cast<std::size_t>(rows) * cols);
    core::broadcast_rows(bias.data(), rows, cols, want.data());
    DeviceFloats dbias = upload(bias), out = upload(random_floats(want.size(), rng));
    ops().broadcast_rows(dbias.data(), rows, cols, out.data());
    EXPECT_TRUE(agree(out.to_host(), want)) << rows << " rows";

    const auto dy = random_floats(want.size(), rng);
    std::vector<float> sums(cols), magnitude(cols);
    core::column_sums(dy.data(), rows, cols, sums.data());
    const auto abs_dy = abs_of(dy);
    core::column_sums(abs_dy.data(), rows, cols, magnitude.data());
    DeviceFloats ddy = upload(dy), db = upload(random_floats(cols, rng));
    ops().column_sums(ddy.data(), rows, cols, db.data());
    EXPECT_TRUE(agree(db.to_host(), sums, magnitude)) << rows << " rows";
  }
}

TEST_P(OpsAgreement, ReluForwardAndBackward) {
  std::mt19937 rng(3);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1001}}) {
    auto x = random_floats(n, rng);
    if (n > 2) x[1] = 0.0f, x[2] = -0.0f;  // the kink: gradient 0 there, as the reference
    const auto dy = random_floats(n, rng);
    std::vector<float> y(n), dx(n);
    core::relu_forward(x.data(), n, y.data());
    core::relu_backward(x.data(), dy.data(), n, dx.data());
    DeviceFloats dxin = upload(x), ddy = upload(dy), dyout = upload(std::vector<float>(n, 7.0f)),
                 ddx = upload(std::vector<float>(n, 7.0f));
    ops().relu_forward(dxin.data(), n, dyout.data());
    ops().relu_backward(dxin.data(), ddy.data(), n, ddx.data());
    EXPECT_EQ(dyout.to_host(), y) << n;
    EXPECT_EQ(ddx.to_host(), dx) << n;
  }
}

// ---------------------------------------------------------------------------------------------
// im2col / col2im, max pooling
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, Im2colAndCol2imOddSizesAndEmptyBatch) {
  std::mt19937 rng(4);
  struct Image {
    int batch, h, w, c;
  };
  for (const Image s : {Image{3, 7, 9, 5}, Image{1, 3, 3, 1}, Image{0, 28, 28, 1},
                        Image{2, 28, 28, 1}, Image{2, 13, 11, 32}}) {
    const std::size_t in = static_cast<std::size_t>(s.batch) * s.h * s.w * s.c;
    const std::size_t rows = static_cast<std::size_t>(s.batch) * (s.h - 2) * (s.w - 2);
    const std::size_t cols_n = rows * 9 * s.c;
    const auto x = random_floats(in, rng);
    std::vector<float> cols(cols_n);
    core::im2col_3x3(x.data(), s.batch, s.h, s.w, s.c, cols.data());
    DeviceFloats dx = upload(x), dcols = upload(random_floats(cols_n, rng));
    ops().im2col_3x3(dx.data(), s.batch, s.h, s.w, s.c, dcols.data());
    EXPECT_EQ(dcols.to_host(), cols)
        << "im2col " << s.batch << "x" << s.h << "x" << s.w << "x" << s.c;

    const auto g = random_floats(cols_n, rng);
    std::vector<float> want(in), magnitude(in);
    core::col2im_3x3(g.data(), s.batch, s.h, s.w, s.c, want.data());
    const auto abs_g = abs_of(g);
    core::col2im_3x3(abs_g.data(), s.batch, s.h, s.w, s.c, magnitude.data());
    DeviceFloats dg = upload(g), dout = upload(random_floats(in, rng));  // garbage: zeroed first
    ops().col2im_3x3(dg.data(), s.batch, s.h, s.w, s.c, dout.data());
    EXPECT_TRUE(agree(dout.to_host(), want, magnitude))
        << "col2im " << s.batch << "x" << s.h << "x" << s.w << "x" << s.c;
  }
}

TEST_P(OpsAgreement, MaxPoolOddSizesTiesAndEmptyBatch) {
  std::mt19937 rng(5);
  struct Image {
    int batch, h, w, c;
  };
  for (const Image s : {Image{2, 7, 5, 3}, Image{0, 26, 26, 32}, Image{4, 26, 26, 32}}) {
    const std::size_t in = static_cast<std::size_t>(s.batch) * s.h * s.w * s.c;
    const std::size_t out = static_cast<std::size_t>(s.batch) * (s.h / 2) * (s.w / 2) * s.c;
    // Three levels only, so windows often hold ties: the first maximum must win everywhere.
    auto x = random_floats(in, rng);
    for (float& v : x) v = std::round(v);
    const auto dy = random_floats(out, rng);
    std::vector<float> y(out), which(out), dx(in);
    core::max_pool_2x2_forward(x.data(), s.batch, s.h, s.w, s.c, y.data(), which.data());
    core::max_pool_2x2_backward(dy.data(), which.data(), s.batch, s.h, s.w, s.c, dx.data());
    DeviceFloats dxin = upload(x), dyout = upload(std::vector<float>(out, 9.0f)),
                 dwhich = upload(std::vector<float>(out, 9.0f)), ddy = upload(dy),
                 ddx = upload(std::vector<float>(in, 9.0f));
    ops().max_pool_2x2_forward(dxin.data(), s.batch, s.h, s.w, s.c, dyout.data(), dwhich.data());
    ops().max_pool_2x2_backward(ddy.data(), dwhich.data(), s.batch, s.h, s.w, s.c, ddx.data());
    EXPECT_EQ(dyout.to_host(), y);
    EXPECT_EQ(dwhich.to_host(), which);
    EXPECT_EQ(ddx.to_host(), dx);  // routing copies values: exact
  }
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, SoftmaxCrossEntropyStatsAndGradient) {
  std::mt19937 rng(6);
  const int classes = 10;
  for (const int batch : {0, 1, 67, 1000}) {
    for (const bool with_grad : {true, false}) {
      // Large logits test the max subtraction; rounding to quarters makes ties for top-5/argmax.
      auto logits = random_floats(static_cast<std::size_t>(batch) * classes, rng, -30, 30);
      for (std::size_t i = 0; i < logits.size(); i += 3) logits[i] = std::round(logits[i] * 4) / 4;
      std::vector<std::uint8_t> labels(static_cast<std::size_t>(batch));
      for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % classes);
      std::vector<float> grad(logits.size());
      LossStats want;
      core::softmax_cross_entropy_rows(logits.data(), labels.data(), batch, classes, 0.125f,
                                       with_grad ? grad.data() : nullptr, &want);

      // The labels' bytes travel in a float buffer (DeviceFloats copies bytes exactly).
      std::vector<float> labels_as_floats((labels.size() + 3) / 4 + 1, 0.0f);
      auto* device_label_bytes = reinterpret_cast<std::uint8_t*>(labels_as_floats.data());
      std::copy(labels.begin(), labels.end(), device_label_bytes);
      DeviceFloats dlabels = upload(labels_as_floats), dlogits = upload(logits),
                   dgrad = upload(std::vector<float>(logits.size(), 5.0f));
      LossStats got;
      got.loss_sum = -1;
      ops().softmax_cross_entropy(dlogits.data(), reinterpret_cast<std::uint8_t*>(dlabels.data()),
                                  batch, classes, 0.125f, with_grad ? dgrad.data() : nullptr, &got);
      ops().wait_loss_stats();
      EXPECT_EQ(got.count, batch);
      EXPECT_EQ(got.correct, want.correct) << batch;
      EXPECT_EQ(got.correct_top5, want.correct_top5) << batch;
      EXPECT_NEAR(got.loss_sum, want.loss_sum, kRelative * std::abs(want.loss_sum)) << batch;
      if (with_grad)
        EXPECT_TRUE(agree(dgrad.to_host(), grad)) << batch << " rows";
      else
        EXPECT_EQ(dgrad.to_host(), std::vector<float>(logits.size(), 5.0f));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Optimizers: the real Optimizer classes, made with the target's Ops, for a few steps
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, OptimizerUpdatesOverThreeSteps) {
  std::mt19937 rng(7);
  const std::size_t n = 1003;
  for (const auto kind :
       {core::OptimizerKind::kSgd, core::OptimizerKind::kAdam, core::OptimizerKind::kNadam}) {
    for (const float momentum : {0.0f, 0.9f}) {
      if (kind != core::OptimizerKind::kSgd && momentum == 0.0f) continue;
      core::OptimizerConfig config;
      config.kind = kind;
      config.learning_rate = 0.01f;
      config.momentum = momentum;
      vgpu::MemoryArena host_arena("reference", 64 * vgpu::kMiB);
      auto reference = core::make_optimizer(config, n, host_arena);
      auto tested = core::make_optimizer(config, n, arena(), ops());
      auto w = random_floats(n, rng);
      DeviceFloats dw = upload(w);
      for (int step = 0; step < 3; ++step) {
        const auto g = random_floats(n, rng);
        reference->apply(w, g);
        DeviceFloats dg = upload(g);
        tested->apply(std::span(dw.data(), n), std::span<const float>(dg.data(), n));
      }
      EXPECT_TRUE(agree(dw.to_host(), w)) << core::to_string(kind) << " momentum " << momentum;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Memory and timing
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, CopiesAndFillAtOddOffsets) {
  std::mt19937 rng(8);
  const auto x = random_floats(1001, rng);
  DeviceFloats a = upload(x), b = upload(std::vector<float>(1001, 0.0f));
  ops().copy(b.data() + 1, a.data() + 3, 997);
  ops().fill(b.data() + 998, 3, -2.5f);
  ops().copy(b.data(), a.data(), 0);
  std::vector<float> want(1001, 0.0f);
  std::copy(x.begin() + 3, x.begin() + 1000, want.begin() + 1);
  std::fill(want.begin() + 998, want.end(), -2.5f);
  EXPECT_EQ(b.to_host(), want);
}

TEST_P(OpsAgreement, FirstNonfiniteFindsTheFirstNanOrInfinityAnywhere) {
  std::mt19937 rng(9);
  const std::size_t n = 10007;                               // blocks of 4096 and a ragged end
  const auto finite = random_floats(n, rng, -1e38f, 1e38f);  // large, all finite
  DeviceFloats clean = upload(finite);
  EXPECT_EQ(ops().first_nonfinite(clean.data(), n), n);
  EXPECT_EQ(ops().first_nonfinite(clean.data(), 0), 0u);
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  for (const std::size_t at : {std::size_t{0}, std::size_t{4095}, std::size_t{4096}, n - 1}) {
    for (const float bad : {kNan, kInf, -kInf}) {
      std::vector<float> x = finite;
      x[at] = bad;
      if (at + 5 < n) x[at + 5] = kNan;  // a later one does not hide the first
      DeviceFloats d = upload(x);
      EXPECT_EQ(ops().first_nonfinite(d.data(), n), at) << bad << " at " << at;
      EXPECT_EQ(core::first_nonfinite(x.data(), n), at);  // the CPU reference, too
    }
  }
}

TEST_P(OpsAgreement, TimeMarksAreOrderedAndLaterThanTheirStart) {
  std::mt19937 rng(9);
  DeviceFloats x = upload(random_floats(1 << 16, rng)), y = upload(random_floats(1 << 16, rng));
  ops().synchronize();
  const auto before = vgpu::Clock::now();
  ops().begin_marks();
  const core::TimeMark a = ops().mark();
  ops().relu_forward(x.data(), x.size(), y.data());
  const core::TimeMark b = ops().mark();
  ops().synchronize();
  EXPECT_LE(before, ops().time_of(a));
  EXPECT_LE(ops().time_of(a), ops().time_of(b));
}

// ---------------------------------------------------------------------------------------------
// A whole model: forward, loss and backward on the target against the CPU model
// ---------------------------------------------------------------------------------------------
TEST_P(OpsAgreement, ModelForwardAndBackwardMatchTheCpuModel) {
  std::mt19937 rng(10);
  for (const auto kind : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
    vgpu::MemoryArena host_arena("reference", 512 * vgpu::kMiB);
    auto reference = core::Model::create(kind, host_arena);
    auto tested = core::Model::create(kind, arena(), ops());
    reference->init(3);
    tested->init(3);
    ASSERT_EQ(tested->params_fingerprint(), reference->params_fingerprint())
        << "the same seed must give the same bits on every device";

    const int batch = 13;
    const auto pixels = random_floats(static_cast<std::size_t>(batch) * 784, rng, 0, 1);
    std::vector<std::uint8_t> labels(batch);
    for (auto& l : labels) l = static_cast<std::uint8_t>(rng() % 10);
    core::Tensor x_ref(host_arena, {batch, 28, 28, 1}, "x"),
        x_dev(arena(), {batch, 28, 28, 1}, "x");
    std::copy(pixels.begin(), pixels.end(), x_ref.data());
    ops().copy_to_device(x_dev.data(), pixels.data(), pixels.size() * sizeof(float));
    std::vector<float> label_words(4, 0.0f);
    std::copy(labels.begin(), labels.end(), reinterpret_cast<std::uint8_t*>(label_words.data()));
    DeviceFloats dlabels = upload(label_words);

    core::Tensor g_ref, g_dev;
    const LossStats want = core::softmax_cross_entropy(reference->forward(x_ref), labels,
                                                       1.0f / batch, &g_ref, &host_arena);
    reference->backward(g_ref);
    LossStats got;
    core::enqueue_softmax_cross_entropy(ops(), tested->forward(x_dev), labels,
                                        reinterpret_cast<std::uint8_t*>(dlabels.data()),
                                        1.0f / batch, &g_dev, &arena(), &got);
    tested->backward(g_dev);
    ops().wait_loss_stats();
    EXPECT_NEAR(got.loss_sum, want.loss_sum, kRelative * want.loss_sum) << core::to_string(kind);
    EXPECT_EQ(got.correct, want.correct);

    // Gradients are sums over the batch and the layers: relative to the largest of the element
    // and the gradient's RMS, as the mirrored-equivalence test does.
    std::vector<float> grads(tested->num_params());
    ops().copy_to_host(grads.data(), tested->grads().data(), grads.size() * sizeof(float));
    const auto ref_grads = reference->grads();
    double sum_sq = 0;
    for (float g : ref_grads) sum_sq += double{g} * g;
    const float rms = static_cast<float>(std::sqrt(sum_sq / static_cast<double>(grads.size())));
    EXPECT_TRUE(
        agree(grads, {ref_grads.begin(), ref_grads.end()}, std::vector<float>(grads.size(), rms)))
        << core::to_string(kind);
  }
}

}  // namespace mirrorlab::testing
