// CUDA kernels of the image layers: im2col / col2im for 3x3 valid convolutions and 2x2 max
// pooling, NHWC. CPU references: im2col_3x3, col2im_3x3 (kernels_cpu.cpp), max_pool_2x2_forward,
// max_pool_2x2_backward (kernels_cpu_nn.cpp). The work per element is in kernel_elements.h,
// where the tests run it on the CPU.
//
// The adjoints (col2im, pooling backward) are written as gathers, one thread per input element,
// instead of scatters with atomics: no zeroing pass, no atomics, and a fixed summation order, so
// the result is deterministic and, for col2im, adds its terms in the CPU reference's order.
#include "core/nn/cuda/kernels_cuda.h"
#include "core/nn/kernel_elements.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels: grid-stride loops over kernel_elements.h
// ---------------------------------------------------------------------------------------------
// One thread per element of cols: writes are coalesced, and consecutive threads read consecutive
// channels of one pixel.
__global__ void im2col_3x3_kernel(const float* __restrict__ x, std::size_t total, int h, int w,
                                  int c, float* __restrict__ cols) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    cols[i] = x[elements::im2col_3x3_source(i, h, w, c)];
  }
}

__global__ void col2im_3x3_kernel(const float* __restrict__ dcols, std::size_t total, int h, int w,
                                  int c, float* __restrict__ dx) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    dx[i] = elements::col2im_3x3_at(dcols, i, h, w, c);
  }
}

__global__ void max_pool_forward_kernel(const float* __restrict__ x, std::size_t total, int h,
                                        int w, int c, float* __restrict__ y,
                                        float* __restrict__ which) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const elements::PoolWinner best = elements::max_pool_2x2_at(x, i, h, w, c);
    y[i] = best.value;
    which[i] = best.at;
  }
}

__global__ void max_pool_backward_kernel(const float* __restrict__ dy,
                                         const float* __restrict__ which, std::size_t total, int h,
                                         int w, int c, float* __restrict__ dx) {
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    dx[i] = elements::max_pool_2x2_backward_at(dy, which, i, h, w, c);
  }
}

// Elements of an NHWC tensor, or 0 when any size is not positive.
std::size_t elements_of(int batch, int h, int w, int c) {
  if (batch <= 0 || h <= 0 || w <= 0 || c <= 0) return 0;
  return static_cast<std::size_t>(batch) * static_cast<std::size_t>(h) *
         static_cast<std::size_t>(w) * static_cast<std::size_t>(c);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols, cudaStream_t stream) {
  if (h < 3 || w < 3) return;
  const std::size_t total = elements_of(batch, h - 2, w - 2, c) * 9;
  launch_elementwise(im2col_3x3_kernel, total, stream, x, total, h, w, c, cols);
}

void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                cudaStream_t stream) {
  const std::size_t total = elements_of(batch, h, w, c);
  launch_elementwise(col2im_3x3_kernel, total, stream, dcols, total, h, w, c, dx);
}

void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                          cudaStream_t stream) {
  const std::size_t total = elements_of(batch, h / 2, w / 2, c);
  launch_elementwise(max_pool_forward_kernel, total, stream, x, total, h, w, c, y, which);
}

void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                           float* dx, cudaStream_t stream) {
  const std::size_t total = elements_of(batch, h, w, c);
  launch_elementwise(max_pool_backward_kernel, total, stream, dy, which, total, h, w, c, dx);
}

}  // namespace mirrorlab::core::cuda
