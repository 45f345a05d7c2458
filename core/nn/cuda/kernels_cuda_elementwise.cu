// Element-wise CUDA kernels: bias broadcast, ReLU, fill, matrix scaling, the finiteness check.
// CPU references: broadcast_rows, relu_forward, relu_backward, first_nonfinite (kernels_cpu*.cpp);
// scale_matrix is the beta * C of gemm_reference (kernels_cpu.cpp). Memory bound: one thread per
// element, consecutive threads on consecutive floats (coalesced), grid-stride loops so any n
// fits. The work per element is in kernel_elements.h, where the tests run it on the CPU.
#include "core/nn/cuda/kernels_cuda.h"
#include "core/nn/kernel_elements.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels: grid-stride loops over kernel_elements.h
// ---------------------------------------------------------------------------------------------
__global__ void broadcast_rows_kernel(const float* __restrict__ bias, std::size_t total, int cols,
                                      float* __restrict__ out) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    out[i] = elements::broadcast_rows_at(bias, cols, i);
  }
}

__global__ void relu_forward_kernel(const float* __restrict__ x, std::size_t n,
                                    float* __restrict__ y) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    y[i] = elements::relu_forward_at(x, i);
  }
}

__global__ void relu_backward_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                     std::size_t n, float* __restrict__ dx) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    dx[i] = elements::relu_backward_at(x, dy, i);
  }
}

__global__ void fill_kernel(float* __restrict__ dst, std::size_t n, float value) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = value;
}

// Every non-finite element bids its index; the smallest wins (an atomic: not a function per
// element, but a minimum, which any order of the bids gives; tests/core/nn/test_kernel_elements.cpp
// takes the minimum of the same bids on the CPU).
__global__ void first_nonfinite_kernel(const float* __restrict__ x, std::size_t n,
                                       unsigned long long* first) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    if (elements::is_nonfinite(x[i])) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

__global__ void set_slot_kernel(unsigned long long* slot, unsigned long long value) {
  *slot = value;
}

__global__ void scale_matrix_kernel(float* c, std::size_t total, int n, int ldc, float beta) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    float& v = c[elements::strided_index(i, n, ldc)];
    v = elements::scaled(v, beta);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void broadcast_rows(const float* bias, int rows, int cols, float* out, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const std::size_t total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  launch_elementwise(broadcast_rows_kernel, total, stream, bias, total, cols, out);
}

void relu_forward(const float* x, std::size_t n, float* y, cudaStream_t stream) {
  launch_elementwise(relu_forward_kernel, n, stream, x, n, y);
}

void relu_backward(const float* x, const float* dy, std::size_t n, float* dx, cudaStream_t stream) {
  launch_elementwise(relu_backward_kernel, n, stream, x, dy, n, dx);
}

void fill(float* dst, std::size_t n, float value, cudaStream_t stream) {
  launch_elementwise(fill_kernel, n, stream, dst, n, value);
}

void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot, cudaStream_t stream) {
  // The slot is set by a kernel, not copied from the host: nothing in the search touches host
  // memory, so it can be queued (or captured) with the rest of the step.
  set_slot_kernel<<<1, 1, 0, stream>>>(slot, static_cast<unsigned long long>(n));
  MIRRORLAB_CUDA_CHECK_LAUNCH();
  launch_elementwise(first_nonfinite_kernel, n, stream, x, n, slot);
}

void scale_matrix(float* c, int m, int n, int ldc, float beta, cudaStream_t stream) {
  if (m <= 0 || n <= 0 || beta == 1.0f) return;
  const std::size_t total = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  launch_elementwise(scale_matrix_kernel, total, stream, c, total, n, ldc, beta);
}

}  // namespace mirrorlab::core::cuda
