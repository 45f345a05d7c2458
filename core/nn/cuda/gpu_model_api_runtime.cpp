// GpuModelApi on the CUDA runtime and cuBLAS: each method one cuBLAS call or one launch of
// kernels_cuda_*.cu (the handle's setup: four). The layer only a GPU can check; CudaOps above it
// runs against tests/support/cuda/fake_gpu_model_api.h everywhere.
#include <cuda_runtime_api.h>

#include <string>

#include "core/nn/cuda/counting_gpu_model_api.h"
#include "core/nn/cuda/cublas_check.h"
#include "core/nn/cuda/gpu_model_api.h"
#include "core/nn/cuda/kernels_cuda.h"

namespace mirrorlab::core {

void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file, int line) {
  throw vgpu::CudaError(static_cast<int>(status), std::string(expression) + " failed at " + file +
                                                      ":" + std::to_string(line) + ": " +
                                                      cublasGetStatusString(status) + " (" +
                                                      cublasGetStatusName(status) + ")");
}

namespace {

cudaStream_t as_stream(vgpu::GpuStream stream) { return static_cast<cudaStream_t>(stream); }
cublasHandle_t as_blas(BlasHandle blas) { return static_cast<cublasHandle_t>(blas); }
cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

class RuntimeGpuModelApi final : public GpuModelApi {
 public:
  BlasHandle create_blas(vgpu::GpuStream stream) override {
    cublasHandle_t blas = nullptr;
    MIRRORLAB_CUBLAS_CHECK(cublasCreate(&blas));
    try {
      MIRRORLAB_CUBLAS_CHECK(cublasSetStream(blas, as_stream(stream)));
      MIRRORLAB_CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
      MIRRORLAB_CUBLAS_CHECK(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
    } catch (...) {
      (void)cublasDestroy(blas);
      throw;
    }
    return blas;
  }
  void destroy_blas(BlasHandle blas) noexcept override { (void)cublasDestroy(as_blas(blas)); }
  void sgemm(BlasHandle blas, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
             const float* a, int lda, const float* b, int ldb, float beta, float* c,
             int ldc) override {
    MIRRORLAB_CUBLAS_CHECK(cublasSgemm(as_blas(blas), op(trans_a), op(trans_b), m, n, k, &alpha, a,
                                       lda, b, ldb, &beta, c, ldc));
  }
  void sgemv(BlasHandle blas, int m, int n, float alpha, const float* a, int lda, const float* x,
             float beta, float* y) override {
    MIRRORLAB_CUBLAS_CHECK(
        cublasSgemv(as_blas(blas), CUBLAS_OP_N, m, n, &alpha, a, lda, x, 1, &beta, y, 1));
  }

  void broadcast_rows(const float* bias, int rows, int cols, float* out,
                      vgpu::GpuStream stream) override {
    cuda::broadcast_rows(bias, rows, cols, out, as_stream(stream));
  }
  void relu_forward(const float* x, std::size_t n, float* y, vgpu::GpuStream stream) override {
    cuda::relu_forward(x, n, y, as_stream(stream));
  }
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx,
                     vgpu::GpuStream stream) override {
    cuda::relu_backward(x, dy, n, dx, as_stream(stream));
  }
  void fill(float* dst, std::size_t n, float value, vgpu::GpuStream stream) override {
    cuda::fill(dst, n, value, as_stream(stream));
  }
  void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                      vgpu::GpuStream stream) override {
    cuda::find_nonfinite(x, n, slot, as_stream(stream));
  }
  void scale_matrix(float* c, int m, int n, int ldc, float beta, vgpu::GpuStream stream) override {
    cuda::scale_matrix(c, m, n, ldc, beta, as_stream(stream));
  }
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols,
                  vgpu::GpuStream stream) override {
    cuda::im2col_3x3(x, batch, h, w, c, cols, as_stream(stream));
  }
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                  vgpu::GpuStream stream) override {
    cuda::col2im_3x3(dcols, batch, h, w, c, dx, as_stream(stream));
  }
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                            vgpu::GpuStream stream) override {
    cuda::max_pool_2x2_forward(x, batch, h, w, c, y, which, as_stream(stream));
  }
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx, vgpu::GpuStream stream) override {
    cuda::max_pool_2x2_backward(dy, which, batch, h, w, c, dx, as_stream(stream));
  }
  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad, elements::LossRow* rows,
                             elements::LossSums* sums, vgpu::GpuStream stream) override {
    cuda::softmax_cross_entropy(logits, labels, batch, classes, grad_scale, grad, rows, sums,
                                as_stream(stream));
  }
  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum, vgpu::GpuStream stream) override {
    cuda::sgd_update(params, grads, velocity, n, lr, momentum, as_stream(stream));
  }
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const AdamStep& step, vgpu::GpuStream stream) override {
    cuda::adam_update(params, grads, m, v, n, step, as_stream(stream));
  }
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const NadamStep& step, vgpu::GpuStream stream) override {
    cuda::nadam_update(params, grads, m, v, n, step, as_stream(stream));
  }
};

}  // namespace

GpuModelApi& runtime_gpu_model_api() {
  static RuntimeGpuModelApi api;  // stateless: one for the process
  static CountingGpuModelApi counted(api, vgpu::process_gpu_work_counts());
  return counted;
}

}  // namespace mirrorlab::core
