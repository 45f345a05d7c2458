// The model's side of the thin interface between CUDA and our code (virtualgpu/cuda/cuda_api.h
// is the runtime's side): cuBLAS's two products and the launches of the model's kernels
// (kernels_cuda.h), with no CUDA type in sight. CudaOps (ops_cuda.cpp) is written over the two
// interfaces, so its own logic (cuBLAS's column-major operands, the loss sums read back through
// pinned memory, the scratch that only grows, the phase marks' events) runs in every build.
//
//   - runtime_gpu_model_api() (gpu_model_api_runtime.cpp, CUDA builds): each method one cuBLAS
//     call or one kernel launch. This is the layer only a GPU can check.
//   - FakeGpuModelApi (tests/support/cuda/fake_gpu_model_api.h): each kernel as the CPU reference
//   of the same
//     name computes it, on the fake runtime's host memory, checking that every pointer is inside
//     a live block of the current GPU and every stream and handle is live.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/nn/kernel_elements_train.h"
#include "core/nn/ops.h"
#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::core {

using BlasHandle = void*;  // a cublasHandle_t

class GpuModelApi {
 public:
  virtual ~GpuModelApi() = default;

  // ---- cuBLAS, on the current GPU -------------------------------------------------------------
  // A handle whose work all goes on `stream` (in order with the kernels), in full FP32 (no TF32:
  // it would round the inputs to 10 mantissa bits), scalars passed from the host.
  virtual BlasHandle create_blas(vgpu::GpuStream stream) = 0;
  virtual void destroy_blas(BlasHandle blas) noexcept = 0;
  // cublasSgemm, column-major: C[m x n] = alpha op(A) op(B) + beta C, op(X) = X^T when trans_x.
  virtual void sgemm(BlasHandle blas, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                     const float* a, int lda, const float* b, int ldb, float beta, float* c,
                     int ldc) = 0;
  // cublasSgemv, column-major, A not transposed: y[m] = alpha A[m x n] x[n] + beta y.
  virtual void sgemv(BlasHandle blas, int m, int n, float alpha, const float* a, int lda,
                     const float* x, float beta, float* y) = 0;

  // ---- the model's kernels (kernels_cuda.h: the semantics of kernels_cpu.h's references), on
  // `stream` of the current GPU; nothing for an empty input ------------------------------------
  virtual void broadcast_rows(const float* bias, int rows, int cols, float* out,
                              vgpu::GpuStream stream) = 0;
  virtual void relu_forward(const float* x, std::size_t n, float* y, vgpu::GpuStream stream) = 0;
  virtual void relu_backward(const float* x, const float* dy, std::size_t n, float* dx,
                             vgpu::GpuStream stream) = 0;
  virtual void fill(float* dst, std::size_t n, float value, vgpu::GpuStream stream) = 0;
  // Queues the search for the first NaN or infinity in x[0, n): `slot` (GPU memory) holds its
  // index, or n, once the stream has run it. No wait: the caller reads the slot back.
  virtual void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                              vgpu::GpuStream stream) = 0;
  virtual void scale_matrix(float* c, int m, int n, int ldc, float beta,
                            vgpu::GpuStream stream) = 0;
  virtual void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols,
                          vgpu::GpuStream stream) = 0;
  virtual void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                          vgpu::GpuStream stream) = 0;
  virtual void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                                    float* which, vgpu::GpuStream stream) = 0;
  virtual void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w,
                                     int c, float* dx, vgpu::GpuStream stream) = 0;
  // The loss's gradient into `grad` and its sums into `sums` (GPU memory), `rows` its scratch.
  virtual void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                                     int classes, float grad_scale, float* grad,
                                     elements::LossRow* rows, elements::LossSums* sums,
                                     vgpu::GpuStream stream) = 0;
  virtual void sgd_update(float* params, const float* grads, float* velocity, std::size_t n,
                          float lr, float momentum, vgpu::GpuStream stream) = 0;
  virtual void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                           const AdamStep& step, vgpu::GpuStream stream) = 0;
  virtual void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                            const NadamStep& step, vgpu::GpuStream stream) = 0;
};

// The process's cuBLAS and kernels. Throws std::runtime_error with a sentence in a build without
// CUDA.
GpuModelApi& runtime_gpu_model_api();

}  // namespace mirrorlab::core
