#include "tests/support/cuda/fake_gpu_model_api.h"

#include <algorithm>

#include "core/nn/loss.h"
#include "core/nn/ops.h"
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::testing {
namespace {

std::size_t size(int n) { return n > 0 ? static_cast<std::size_t>(n) : 0; }

// Floats a column-major matrix of `rows` x `cols` with leading dimension ld spans.
std::size_t extent(int rows, int cols, int ld) {
  return rows <= 0 || cols <= 0 ? 0 : size(ld) * (size(cols) - 1) + size(rows);
}

core::Ops& reference() { return core::cpu_ops(); }

}  // namespace

std::vector<std::string> FakeGpuModelApi::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

std::vector<std::string> FakeGpuModelApi::leaks() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> left;
  for (const auto& [h, handle] : handles_) {
    if (handle.live) left.push_back("cuBLAS handle " + std::to_string(handle.id));
  }
  return left;
}

int FakeGpuModelApi::count(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const std::string& c) {
    return c.compare(0, name.size(), name) == 0;
  }));
}

void FakeGpuModelApi::fail_next(const std::string& name) {
  std::lock_guard lock(mutex_);
  failing_.push_back(name);
}

void FakeGpuModelApi::violation(const std::string& line) {
  std::lock_guard lock(mutex_);
  violations_.push_back(line);
}

bool FakeGpuModelApi::begin(const std::string& name, vgpu::GpuStream stream) {
  {
    std::lock_guard lock(mutex_);
    calls_.push_back(name);
    const auto failing = std::find(failing_.begin(), failing_.end(), name);
    if (failing != failing_.end()) {
      failing_.erase(failing);
      throw vgpu::CudaError(13, name + " failed (the test asked it to)");
    }
  }
  return cuda_.check_stream_on(stream, cuda_.current_gpu(), name);
}

bool FakeGpuModelApi::begin_blas(const std::string& name, core::BlasHandle blas) {
  vgpu::GpuStream stream = nullptr;
  {
    std::lock_guard lock(mutex_);
    const auto found = handles_.find(blas);
    if (found == handles_.end() || !found->second.live) {
      violations_.push_back(name + " with a cuBLAS handle that is not alive");
      return false;
    }
    if (found->second.gpu != cuda_.current_gpu()) {
      violations_.push_back(name + " with GPU " + std::to_string(cuda_.current_gpu()) +
                            " current, on a handle made on GPU " +
                            std::to_string(found->second.gpu));
      return false;
    }
    stream = found->second.stream;
  }
  return begin(name, stream);
}

vgpu::GpuStream FakeGpuModelApi::stream_of(core::BlasHandle blas) const {
  std::lock_guard lock(mutex_);
  const auto found = handles_.find(blas);
  return found == handles_.end() ? nullptr : found->second.stream;
}

bool FakeGpuModelApi::inside(const void* p, std::size_t bytes, const std::string& what) {
  return bytes == 0 || cuda_.check_device_range(p, bytes, cuda_.current_gpu(), what);
}

// ---- cuBLAS ----------------------------------------------------------------------------------
core::BlasHandle FakeGpuModelApi::create_blas(vgpu::GpuStream stream) {
  const bool ok = begin("create_blas", stream);
  std::lock_guard lock(mutex_);
  if (!ok) throw vgpu::CudaError(7, "create_blas on a stream it cannot use");
  const int id = next_id_++;
  auto* handle = reinterpret_cast<core::BlasHandle>(static_cast<std::uintptr_t>(0xB1A50000 + id));
  handles_[handle] = {stream, cuda_.current_gpu(), id, true};
  return handle;
}

void FakeGpuModelApi::destroy_blas(core::BlasHandle blas) noexcept {
  std::lock_guard lock(mutex_);
  calls_.push_back("destroy_blas");
  const auto found = handles_.find(blas);
  if (found == handles_.end() || !found->second.live) {
    violations_.push_back("destroy_blas of a handle that is not alive");
    return;
  }
  found->second.live = false;
}

void FakeGpuModelApi::sgemm(core::BlasHandle blas, bool trans_a, bool trans_b, int m, int n, int k,
                            float alpha, const float* a, int lda, const float* b, int ldb,
                            float beta, float* c, int ldc) {
  if (!begin_blas("sgemm", blas)) return;
  // cuBLAS's own rule for the leading dimensions: at least the rows each matrix has.
  if (lda < std::max(1, trans_a ? k : m) || ldb < std::max(1, trans_b ? n : k) ||
      ldc < std::max(1, m)) {
    violation("sgemm with a leading dimension below the rows (cuBLAS: invalid value)");
    return;
  }
  const bool ok = floats(a, trans_a ? extent(k, m, lda) : extent(m, k, lda), "sgemm A") &&
                  floats(b, trans_b ? extent(n, k, ldb) : extent(k, n, ldb), "sgemm B") &&
                  floats(c, extent(m, n, ldc), "sgemm C");
  if (!ok) return;
  cuda_.run_on(stream_of(blas), [=] {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int p = 0; p < k; ++p) {
          const float av = trans_a ? a[p + size(i) * size(lda)] : a[i + size(p) * size(lda)];
          const float bv = trans_b ? b[j + size(p) * size(ldb)] : b[p + size(j) * size(ldb)];
          sum += static_cast<double>(av) * bv;
        }
        float& out = c[i + size(j) * size(ldc)];
        // beta == 0: C is not read (a NaN there does not survive), as BLAS.
        out = static_cast<float>(alpha * sum +
                                 (beta == 0.0f ? 0.0 : static_cast<double>(beta) * out));
      }
    }
  });
}

void FakeGpuModelApi::sgemv(core::BlasHandle blas, int m, int n, float alpha, const float* a,
                            int lda, const float* x, float beta, float* y) {
  if (!begin_blas("sgemv", blas)) return;
  if (lda < std::max(1, m)) {
    violation("sgemv with a leading dimension below the rows (cuBLAS: invalid value)");
    return;
  }
  if (!floats(a, extent(m, n, lda), "sgemv A") || !floats(x, size(n), "sgemv x") ||
      !floats(y, size(m), "sgemv y")) {
    return;
  }
  cuda_.run_on(stream_of(blas), [=] {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) sum += static_cast<double>(a[i + size(j) * size(lda)]) * x[j];
      y[i] =
          static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * y[i]));
    }
  });
}

// ---- the model's kernels: the CPU reference on the fake's host memory ------------------------
void FakeGpuModelApi::broadcast_rows(const float* bias, int rows, int cols, float* out,
                                     vgpu::GpuStream stream) {
  if (!begin("broadcast_rows", stream) || !floats(bias, size(cols), "broadcast_rows bias") ||
      !floats(out, size(rows) * size(cols), "broadcast_rows out")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().broadcast_rows(bias, rows, cols, out); });
}

void FakeGpuModelApi::relu_forward(const float* x, std::size_t n, float* y,
                                   vgpu::GpuStream stream) {
  if (!begin("relu_forward", stream) || !floats(x, n, "relu_forward x") ||
      !floats(y, n, "relu_forward y")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().relu_forward(x, n, y); });
}

void FakeGpuModelApi::relu_backward(const float* x, const float* dy, std::size_t n, float* dx,
                                    vgpu::GpuStream stream) {
  if (!begin("relu_backward", stream) || !floats(x, n, "relu_backward x") ||
      !floats(dy, n, "relu_backward dy") || !floats(dx, n, "relu_backward dx")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().relu_backward(x, dy, n, dx); });
}

void FakeGpuModelApi::fill(float* dst, std::size_t n, float value, vgpu::GpuStream stream) {
  if (!begin("fill", stream) || !floats(dst, n, "fill")) return;
  cuda_.run_on(stream, [=] { reference().fill(dst, n, value); });
}

void FakeGpuModelApi::find_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                                     vgpu::GpuStream stream) {
  if (!begin("find_nonfinite", stream) || !floats(x, n, "find_nonfinite x") ||
      !inside(slot, sizeof *slot, "find_nonfinite slot")) {
    return;
  }
  cuda_.run_on(stream, [=] { *slot = reference().first_nonfinite(x, n); });
}

void FakeGpuModelApi::scale_matrix(float* c, int m, int n, int ldc, float beta,
                                   vgpu::GpuStream stream) {
  // Row-major m x n with row stride ldc: the column-major n x m with leading dimension ldc.
  if (!begin("scale_matrix", stream) || !floats(c, extent(n, m, ldc), "scale_matrix")) return;
  cuda_.run_on(stream, [=] {
    reference().gemm(false, false, m, n, 0, 1.0f, nullptr, 1, nullptr, 1, beta, c, ldc);
  });
}

void FakeGpuModelApi::im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols,
                                 vgpu::GpuStream stream) {
  const std::size_t patches = h < 3 || w < 3 ? 0 : size(batch) * size(h - 2) * size(w - 2);
  if (!begin("im2col_3x3", stream) ||
      !floats(x, size(batch) * size(h) * size(w) * size(c), "im2col_3x3 x") ||
      !floats(cols, patches * 9 * size(c), "im2col_3x3 cols")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().im2col_3x3(x, batch, h, w, c, cols); });
}

void FakeGpuModelApi::col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                                 vgpu::GpuStream stream) {
  const std::size_t patches = h < 3 || w < 3 ? 0 : size(batch) * size(h - 2) * size(w - 2);
  if (!begin("col2im_3x3", stream) || !floats(dcols, patches * 9 * size(c), "col2im_3x3 dcols") ||
      !floats(dx, size(batch) * size(h) * size(w) * size(c), "col2im_3x3 dx")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().col2im_3x3(dcols, batch, h, w, c, dx); });
}

void FakeGpuModelApi::max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                                           float* which, vgpu::GpuStream stream) {
  const std::size_t out = size(batch) * size(h / 2) * size(w / 2) * size(c);
  if (!begin("max_pool_2x2_forward", stream) ||
      !floats(x, size(batch) * size(h) * size(w) * size(c), "max_pool_2x2_forward x") ||
      !floats(y, out, "max_pool_2x2_forward y") ||
      !floats(which, out, "max_pool_2x2_forward which")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().max_pool_2x2_forward(x, batch, h, w, c, y, which); });
}

void FakeGpuModelApi::max_pool_2x2_backward(const float* dy, const float* which, int batch, int h,
                                            int w, int c, float* dx, vgpu::GpuStream stream) {
  const std::size_t out = size(batch) * size(h / 2) * size(w / 2) * size(c);
  if (!begin("max_pool_2x2_backward", stream) || !floats(dy, out, "max_pool_2x2_backward dy") ||
      !floats(which, out, "max_pool_2x2_backward which") ||
      !floats(dx, size(batch) * size(h) * size(w) * size(c), "max_pool_2x2_backward dx")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().max_pool_2x2_backward(dy, which, batch, h, w, c, dx); });
}

void FakeGpuModelApi::softmax_cross_entropy(const float* logits, const std::uint8_t* labels,
                                            int batch, int classes, float grad_scale, float* grad,
                                            core::elements::LossRow* rows,
                                            core::elements::LossSums* sums,
                                            vgpu::GpuStream stream) {
  const std::size_t values = size(batch) * size(classes);
  if (!begin("softmax_cross_entropy", stream) ||
      !floats(logits, values, "softmax_cross_entropy logits") ||
      !inside(labels, size(batch), "softmax_cross_entropy labels") ||
      (grad != nullptr && !floats(grad, values, "softmax_cross_entropy grad")) ||
      !inside(rows, size(batch) * sizeof *rows, "softmax_cross_entropy rows") ||
      !inside(sums, sizeof *sums, "softmax_cross_entropy sums")) {
    return;
  }
  cuda_.run_on(stream, [=] {
    core::LossStats stats;
    reference().softmax_cross_entropy(logits, labels, batch, classes, grad_scale, grad, &stats);
    reference().wait_loss_stats();
    sums->loss_sum = stats.loss_sum;
    sums->correct = stats.correct;
    sums->correct_top5 = stats.correct_top5;
  });
}

void FakeGpuModelApi::sgd_update(float* params, const float* grads, float* velocity, std::size_t n,
                                 float lr, float momentum, vgpu::GpuStream stream) {
  // No velocity without momentum (Ops::sgd_update).
  if (!begin("sgd_update", stream) || !floats(params, n, "sgd_update params") ||
      !floats(grads, n, "sgd_update grads") ||
      (velocity != nullptr && !floats(velocity, n, "sgd_update velocity"))) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().sgd_update(params, grads, velocity, n, lr, momentum); });
}

void FakeGpuModelApi::adam_update(float* params, const float* grads, float* m, float* v,
                                  std::size_t n, const core::AdamStep& step,
                                  vgpu::GpuStream stream) {
  if (!begin("adam_update", stream) || !floats(params, n, "adam_update params") ||
      !floats(grads, n, "adam_update grads") || !floats(m, n, "adam_update m") ||
      !floats(v, n, "adam_update v")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().adam_update(params, grads, m, v, n, step); });
}

void FakeGpuModelApi::nadam_update(float* params, const float* grads, float* m, float* v,
                                   std::size_t n, const core::NadamStep& step,
                                   vgpu::GpuStream stream) {
  if (!begin("nadam_update", stream) || !floats(params, n, "nadam_update params") ||
      !floats(grads, n, "nadam_update grads") || !floats(m, n, "nadam_update m") ||
      !floats(v, n, "nadam_update v")) {
    return;
  }
  cuda_.run_on(stream, [=] { reference().nadam_update(params, grads, m, v, n, step); });
}

}  // namespace mirrorlab::testing
