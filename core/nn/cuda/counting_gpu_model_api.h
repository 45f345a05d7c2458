// A GpuModelApi that counts what passes through it (virtualgpu/cuda/gpu_work_counts.h: cuBLAS
// calls, kernel launches) and hands every call on to another: runtime_gpu_model_api() is the
// runtime's wrapped in one, and a test wraps its fake the same way. A call counts the launches
// its runtime makes for a non-empty input (the loss: two; the search for a NaN: two).
#pragma once

#include "core/nn/cuda/gpu_model_api.h"
#include "virtualgpu/cuda/gpu_work_counts.h"

namespace mirrorlab::core {

class CountingGpuModelApi final : public GpuModelApi {
 public:
  // Both outlive this.
  CountingGpuModelApi(GpuModelApi& inner, vgpu::GpuWorkCounts& counts)
      : inner_(inner), counts_(counts) {}

  BlasHandle create_blas(vgpu::GpuStream stream) override { return inner_.create_blas(stream); }
  void destroy_blas(BlasHandle blas) noexcept override { inner_.destroy_blas(blas); }
  void sgemm(BlasHandle blas, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
             const float* a, int lda, const float* b, int ldb, float beta, float* c,
             int ldc) override {
    counts_.add(vgpu::GpuWork::kBlas);
    inner_.sgemm(blas, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void sgemv(BlasHandle blas, int m, int n, float alpha, const float* a, int lda, const float* x,
             float beta, float* y) override {
    counts_.add(vgpu::GpuWork::kBlas);
    inner_.sgemv(blas, m, n, alpha, a, lda, x, beta, y);
  }

  void broadcast_rows(const float* bias, int rows, int cols, float* out,
                      vgpu::GpuStream stream) override {
    launches(1);
    inner_.broadcast_rows(bias, rows, cols, out, stream);
  }
  void relu_forward(const float* x, std::size_t n, float* y, vgpu::GpuStream stream) override {
    launches(1);
    inner_.relu_forward(x, n, y, stream);
  }
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx,
                     vgpu::GpuStream stream) override {
    launches(1);
    inner_.relu_backward(x, dy, n, dx, stream);
  }
  void fill(float* dst, std::size_t n, float value, vgpu::GpuStream stream) override {
    launches(1);
    inner_.fill(dst, n, value, stream);
  }
  void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                      vgpu::GpuStream stream) override {
    launches(2);
    inner_.find_nonfinite(x, n, slot, stream);
  }
  void scale_matrix(float* c, int m, int n, int ldc, float beta, vgpu::GpuStream stream) override {
    launches(1);
    inner_.scale_matrix(c, m, n, ldc, beta, stream);
  }
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols,
                  vgpu::GpuStream stream) override {
    launches(1);
    inner_.im2col_3x3(x, batch, h, w, c, cols, stream);
  }
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                  vgpu::GpuStream stream) override {
    launches(1);
    inner_.col2im_3x3(dcols, batch, h, w, c, dx, stream);
  }
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                            vgpu::GpuStream stream) override {
    launches(1);
    inner_.max_pool_2x2_forward(x, batch, h, w, c, y, which, stream);
  }
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx, vgpu::GpuStream stream) override {
    launches(1);
    inner_.max_pool_2x2_backward(dy, which, batch, h, w, c, dx, stream);
  }
  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad, elements::LossRow* rows,
                             elements::LossSums* sums, vgpu::GpuStream stream) override {
    launches(batch > 0 ? 2 : 1);  // the rows, then their sum (also of none)
    inner_.softmax_cross_entropy(logits, labels, batch, classes, grad_scale, grad, rows, sums,
                                 stream);
  }
  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum, vgpu::GpuStream stream) override {
    launches(1);
    inner_.sgd_update(params, grads, velocity, n, lr, momentum, stream);
  }
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const AdamStep& step, vgpu::GpuStream stream) override {
    launches(1);
    inner_.adam_update(params, grads, m, v, n, step, stream);
  }
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const NadamStep& step, vgpu::GpuStream stream) override {
    launches(1);
    inner_.nadam_update(params, grads, m, v, n, step, stream);
  }

 private:
  void launches(int n) {
    for (int i = 0; i < n; ++i) counts_.add(vgpu::GpuWork::kKernel);
  }

  GpuModelApi& inner_;
  vgpu::GpuWorkCounts& counts_;
};

}  // namespace mirrorlab::core
