// CpuOps: the Ops of CPU-backed virtual GPUs. Everything runs at once in the calling thread (the
// device's worker thread), so there is nothing to wait for; it holds no state, so one instance
// serves every device and thread.
#include <cstring>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/loss.h"
#include "core/nn/ops.h"

namespace mirrorlab::core {
namespace {

class CpuOps final : public Ops {
 public:
  const char* name() const override { return "cpu"; }
  bool host_accessible() const override { return true; }

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    core::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void broadcast_rows(const float* bias, int rows, int cols, float* out) override {
    core::broadcast_rows(bias, rows, cols, out);
  }
  void column_sums(const float* dy, int rows, int cols, float* db) override {
    core::column_sums(dy, rows, cols, db);
  }
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols) override {
    core::im2col_3x3(x, batch, h, w, c, cols);
  }
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx) override {
    core::col2im_3x3(dcols, batch, h, w, c, dx);
  }
  void relu_forward(const float* x, std::size_t n, float* y) override {
    core::relu_forward(x, n, y);
  }
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx) override {
    core::relu_backward(x, dy, n, dx);
  }
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                            float* which) override {
    core::max_pool_2x2_forward(x, batch, h, w, c, y, which);
  }
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx) override {
    core::max_pool_2x2_backward(dy, which, batch, h, w, c, dx);
  }

  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad,
                             LossStats* stats) override {
    softmax_cross_entropy_rows(logits, labels, batch, classes, grad_scale, grad, stats);
  }
  void wait_loss_stats() override {}

  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum) override {
    core::sgd_update(params, grads, velocity, n, lr, momentum);
  }
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const AdamStep& step) override {
    core::adam_update(params, grads, m, v, n, step);
  }
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const NadamStep& step) override {
    core::nadam_update(params, grads, m, v, n, step);
  }

  void copy(float* dst, const float* src, std::size_t n) override {
    if (n > 0) std::memcpy(dst, src, n * sizeof(float));
  }
  std::size_t first_nonfinite(const float* x, std::size_t n) override {
    return core::first_nonfinite(x, n);
  }
  void fill(float* dst, std::size_t n, float value) override {
    for (std::size_t i = 0; i < n; ++i) dst[i] = value;
  }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host_dst, src, bytes);
  }
  void synchronize() override {}
};

}  // namespace

Ops& cpu_ops() {
  static CpuOps ops;
  return ops;
}

}  // namespace mirrorlab::core
