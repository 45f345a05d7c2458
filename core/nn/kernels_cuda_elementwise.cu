// Element-wise CUDA kernels: bias broadcast, ReLU, fill, matrix scaling.
// CPU references: broadcast_rows, relu_forward, relu_backward (kernels_cpu_nn.cpp); scale_matrix
// is the beta * C of gemm_reference (kernels_cpu.cpp). Memory bound: one thread per element,
// consecutive threads on consecutive floats (coalesced), grid-stride loops so any n fits.
#include "virtualgpu/cuda/cuda_check.h"
#include "core/nn/kernels_cuda.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels
// ---------------------------------------------------------------------------------------------
__global__ void broadcast_rows_kernel(const float* __restrict__ bias, std::size_t total, int cols,
                                      float* __restrict__ out) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) out[i] = bias[i % cols];
}

__global__ void relu_forward_kernel(const float* __restrict__ x, std::size_t n,
                                    float* __restrict__ y) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

__global__ void relu_backward_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                     std::size_t n, float* __restrict__ dx) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  }
}

__global__ void fill_kernel(float* __restrict__ dst, std::size_t n, float value) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = value;
}

// Every non-finite element bids its index; the smallest wins (CPU reference: first_nonfinite).
__global__ void first_nonfinite_kernel(const float* __restrict__ x, std::size_t n,
                                       unsigned long long* first) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    if (!isfinite(x[i])) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

__global__ void scale_matrix_kernel(float* c, std::size_t total, int n, int ldc, float beta) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    float& v = c[(i / n) * ldc + i % n];
    v = beta == 0.0f ? 0.0f : beta * v;  // as BLAS: beta 0 overwrites (a NaN does not survive)
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void broadcast_rows(const float* bias, int rows, int cols, float* out, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  if (total == 0) return;
  broadcast_rows_kernel<<<blocks_for(total), kThreads, 0, stream>>>(bias, total, cols, out);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void relu_forward(const float* x, std::size_t n, float* y, cudaStream_t stream) {
  if (n == 0) return;
  relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, y);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void relu_backward(const float* x, const float* dy, std::size_t n, float* dx, cudaStream_t stream) {
  if (n == 0) return;
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, dy, n, dx);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void fill(float* dst, std::size_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, n, value);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

std::size_t first_nonfinite(const float* x, std::size_t n, unsigned long long* slot,
                            cudaStream_t stream) {
  if (n == 0) return 0;
  unsigned long long first = n;  // pageable: the copy is staged before it returns
  MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(slot, &first, sizeof first, cudaMemcpyHostToDevice, stream));
  first_nonfinite_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, slot);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
  MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(&first, slot, sizeof first, cudaMemcpyDeviceToHost, stream));
  MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<std::size_t>(first);
}

void scale_matrix(float* c, int m, int n, int ldc, float beta, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(m > 0 ? m : 0) * (n > 0 ? n : 0);
  if (total == 0 || beta == 1.0f) return;
  scale_matrix_kernel<<<blocks_for(total), kThreads, 0, stream>>>(c, total, n, ldc, beta);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::core::cuda
