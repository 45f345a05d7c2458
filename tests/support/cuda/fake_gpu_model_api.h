// A fake of the model's GPU side (core/nn/cuda/gpu_model_api.h) over FakeCudaApi, for CudaOps on
// machines without a GPU: cuBLAS's two products computed as cuBLAS defines them (column-major,
// in double), and every kernel as the CPU reference of the same name computes it, on the fake's
// host memory. Each call is checked as the GPU would need it: its stream live and on the current
// GPU, every pointer's whole extent inside live blocks of that GPU, a cuBLAS handle used only
// between its creation and destruction and bound to the stream it is used with. What breaks a
// rule is a line in the runtime fake's violations() (through its checks) or in violations()
// here; handles still alive at the end are in leaks().
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/nn/cuda/gpu_model_api.h"
#include "tests/support/cuda/fake_cuda_api.h"

namespace mirrorlab::testing {

class FakeGpuModelApi final : public core::GpuModelApi {
 public:
  explicit FakeGpuModelApi(FakeCudaApi& cuda) : cuda_(cuda) {}

  std::vector<std::string> violations() const;
  std::vector<std::string> leaks() const;    // cuBLAS handles never destroyed
  int count(const std::string& name) const;  // calls whose name starts with `name`
  // The next call whose name starts with `name` throws a CudaError (as a failed cuBLAS call).
  void fail_next(const std::string& name);

  core::BlasHandle create_blas(vgpu::GpuStream stream) override;
  void destroy_blas(core::BlasHandle blas) noexcept override;
  void sgemm(core::BlasHandle blas, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
             const float* a, int lda, const float* b, int ldb, float beta, float* c,
             int ldc) override;
  void sgemv(core::BlasHandle blas, int m, int n, float alpha, const float* a, int lda,
             const float* x, float beta, float* y) override;

  void broadcast_rows(const float* bias, int rows, int cols, float* out,
                      vgpu::GpuStream stream) override;
  void relu_forward(const float* x, std::size_t n, float* y, vgpu::GpuStream stream) override;
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx,
                     vgpu::GpuStream stream) override;
  void fill(float* dst, std::size_t n, float value, vgpu::GpuStream stream) override;
  void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                      vgpu::GpuStream stream) override;
  void scale_matrix(float* c, int m, int n, int ldc, float beta, vgpu::GpuStream stream) override;
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols,
                  vgpu::GpuStream stream) override;
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                  vgpu::GpuStream stream) override;
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                            vgpu::GpuStream stream) override;
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx, vgpu::GpuStream stream) override;
  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad,
                             core::elements::LossRow* rows, core::elements::LossSums* sums,
                             vgpu::GpuStream stream) override;
  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum, vgpu::GpuStream stream) override;
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const core::AdamStep& step, vgpu::GpuStream stream) override;
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const core::NadamStep& step, vgpu::GpuStream stream) override;

 private:
  struct Handle {
    vgpu::GpuStream stream;
    int gpu, id;
    bool live;
  };
  // Records the call, throws where fail_next asked, checks the stream; false when the kernel
  // must not run (a broken rule).
  bool begin(const std::string& name, vgpu::GpuStream stream);
  bool begin_blas(const std::string& name, core::BlasHandle blas);
  vgpu::GpuStream stream_of(core::BlasHandle blas) const;  // the stream it was made for
  // [p, p + count floats (or bytes)) inside the current GPU's live blocks; nothing for 0.
  bool inside(const void* p, std::size_t bytes, const std::string& what);
  bool floats(const float* p, std::size_t count, const std::string& what) {
    return inside(p, count * sizeof(float), what);
  }
  void violation(const std::string& line);

  FakeCudaApi& cuda_;
  mutable std::mutex mutex_;
  std::map<core::BlasHandle, Handle> handles_;
  std::vector<std::string> calls_, violations_;
  std::vector<std::string> failing_;
  int next_id_ = 1;
};

}  // namespace mirrorlab::testing
