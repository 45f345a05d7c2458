// CUDA kernels of the image layers: im2col / col2im for 3x3 valid convolutions and 2x2 max
// pooling, NHWC. CPU references: im2col_3x3, col2im_3x3 (kernels_cpu.cpp), max_pool_2x2_forward,
// max_pool_2x2_backward (kernels_cpu_nn.cpp).
//
// The adjoints (col2im, pooling backward) are written as gathers, one thread per input element,
// instead of scatters with atomics: no zeroing pass, no atomics, and a fixed summation order, so
// the result is deterministic and, for col2im, adds its terms in the CPU reference's order.
#include "virtualgpu/cuda/cuda_check.h"
#include "core/nn/kernels_cuda.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels
// ---------------------------------------------------------------------------------------------
// One thread per element of cols[row, (ky*3 + kx)*c + ci], row = (b*oh + oy)*ow + ox: writes are
// coalesced, and consecutive threads read consecutive channels of one pixel.
__global__ void im2col_3x3_kernel(const float* __restrict__ x, std::size_t total, int h, int w,
                                  int c, float* __restrict__ cols) {
  const int oh = h - 2, ow = w - 2, patch = 9 * c;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const std::size_t row = i / patch;
    const int col = static_cast<int>(i % patch);
    const int ky = col / (3 * c), kx = (col / c) % 3, ci = col % c;
    const int ox = static_cast<int>(row % ow);
    const int oy = static_cast<int>((row / ow) % oh);
    const std::size_t b = row / (static_cast<std::size_t>(ow) * oh);
    cols[i] = x[((b * h + oy + ky) * w + ox + kx) * c + ci];
  }
}

// dx[b, y, x, ci] = sum over the (up to 9) output pixels whose window covers (y, x). The CPU
// reference adds them output pixel by output pixel in row-major order, i.e. oy ascending, then
// ox ascending: ky = y - oy descending, kx = x - ox descending. Same order here.
__global__ void col2im_3x3_kernel(const float* __restrict__ dcols, std::size_t total, int h, int w,
                                  int c, float* __restrict__ dx) {
  const int oh = h - 2, ow = w - 2, patch = 9 * c;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const int ci = static_cast<int>(i % c);
    const int x = static_cast<int>((i / c) % w);
    const int y = static_cast<int>((i / (static_cast<std::size_t>(c) * w)) % h);
    const std::size_t b = i / (static_cast<std::size_t>(c) * w * h);
    float sum = 0.0f;
    for (int ky = 2; ky >= 0; --ky) {
      const int oy = y - ky;
      if (oy < 0 || oy >= oh) continue;
      for (int kx = 2; kx >= 0; --kx) {
        const int ox = x - kx;
        if (ox < 0 || ox >= ow) continue;
        const std::size_t row = (b * oh + oy) * ow + ox;
        sum += dcols[row * patch + (ky * 3 + kx) * c + ci];
      }
    }
    dx[i] = sum;
  }
}

// One thread per output element; the comparisons of the CPU reference, in its order (first
// maximum wins ties).
__global__ void max_pool_forward_kernel(const float* __restrict__ x, std::size_t total, int h,
                                        int w, int c, float* __restrict__ y,
                                        float* __restrict__ which) {
  const int oh = h / 2, ow = w / 2;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const int ci = static_cast<int>(i % c);
    const int ox = static_cast<int>((i / c) % ow);
    const int oy = static_cast<int>((i / (static_cast<std::size_t>(c) * ow)) % oh);
    const std::size_t b = i / (static_cast<std::size_t>(c) * ow * oh);
    const std::size_t row = static_cast<std::size_t>(w) * c;
    const float* p00 = x + (b * h + 2 * oy) * row + static_cast<std::size_t>(2 * ox) * c + ci;
    float m = p00[0], at = 0.0f;
    if (p00[c] > m) m = p00[c], at = 1.0f;
    if (p00[row] > m) m = p00[row], at = 2.0f;
    if (p00[row + c] > m) m = p00[row + c], at = 3.0f;
    y[i] = m;
    which[i] = at;
  }
}

// One thread per input element: its window's gradient if it won the window, else 0 (also for
// the floored last row / column, which belong to no window).
__global__ void max_pool_backward_kernel(const float* __restrict__ dy,
                                         const float* __restrict__ which, std::size_t total, int h,
                                         int w, int c, float* __restrict__ dx) {
  const int oh = h / 2, ow = w / 2;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const int ci = static_cast<int>(i % c);
    const int x = static_cast<int>((i / c) % w);
    const int y = static_cast<int>((i / (static_cast<std::size_t>(c) * w)) % h);
    const std::size_t b = i / (static_cast<std::size_t>(c) * w * h);
    const int oy = y / 2, ox = x / 2;
    float g = 0.0f;
    if (oy < oh && ox < ow) {
      const std::size_t o = ((b * oh + oy) * ow + ox) * c + ci;
      if (which[o] == static_cast<float>((y % 2) * 2 + x % 2)) g = dy[o];
    }
    dx[i] = g;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols, cudaStream_t stream) {
  if (batch <= 0 || h < 3 || w < 3 || c <= 0) return;
  const std::size_t total = static_cast<std::size_t>(batch) * (h - 2) * (w - 2) * 9 * c;
  im2col_3x3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, total, h, w, c, cols);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx,
                cudaStream_t stream) {
  if (batch <= 0 || h <= 0 || w <= 0 || c <= 0) return;
  const std::size_t total = static_cast<std::size_t>(batch) * h * w * c;
  col2im_3x3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dcols, total, h, w, c, dx);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                          cudaStream_t stream) {
  const std::size_t total =
      static_cast<std::size_t>(batch > 0 ? batch : 0) * (h / 2) * (w / 2) * (c > 0 ? c : 0);
  if (total == 0) return;
  max_pool_forward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, total, h, w, c, y, which);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                           float* dx, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(batch > 0 ? batch : 0) * (h > 0 ? h : 0) *
                            (w > 0 ? w : 0) * (c > 0 ? c : 0);
  if (total == 0) return;
  max_pool_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dy, which, total, h, w, c,
                                                                       dx);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::core::cuda
