// The work per element of the CUDA kernels of the layers (cuda/kernels_cuda_elementwise.cu,
// cuda/kernels_cuda_conv.cu), as functions both sides compile (MIRRORLAB_HD). Each `__global__`
// kernel is a grid-stride loop over one of these; tests/core/nn/test_kernel_elements.cpp calls them
// on the CPU over every index and compares with the CPU references (kernels_cpu.h) bit for bit:
// none of them rounds differently from its reference (copies, comparisons, and col2im's sum, which
// adds its terms in the reference's order).
//
// Index math in std::size_t: a tensor may hold more than 2^31 elements.
#pragma once

#include <cfloat>
#include <cstddef>

#include "virtualgpu/cuda/host_device.h"

namespace mirrorlab::core::elements {

// ---- element-wise -------------------------------------------------------------------------------
// out[i] of broadcast_rows: row i / cols gets the bias, so out[i] = bias[i % cols].
MIRRORLAB_HD inline float broadcast_rows_at(const float* bias, int cols, std::size_t i) {
  return bias[i % static_cast<std::size_t>(cols)];
}

MIRRORLAB_HD inline float relu_forward_at(const float* x, std::size_t i) {
  const float v = x[i];
  return v > 0.0f ? v : 0.0f;
}

MIRRORLAB_HD inline float relu_backward_at(const float* x, const float* dy, std::size_t i) {
  return x[i] > 0.0f ? dy[i] : 0.0f;
}

// NaN or an infinity: NaN fails both comparisons, an infinity one of them.
MIRRORLAB_HD inline bool is_nonfinite(float v) { return !(v >= -FLT_MAX && v <= FLT_MAX); }

// Element i of an m x n block stored with row stride ldc (i counts the block's elements in row
// order): where it is in memory.
MIRRORLAB_HD inline std::size_t strided_index(std::size_t i, int n, int ldc) {
  const auto cols = static_cast<std::size_t>(n);
  return (i / cols) * static_cast<std::size_t>(ldc) + i % cols;
}

// beta * v as BLAS scales C: beta 0 overwrites (a NaN or infinity in C does not survive).
MIRRORLAB_HD inline float scaled(float v, float beta) { return beta == 0.0f ? 0.0f : beta * v; }

// ---- 3x3 valid convolution, NHWC ----------------------------------------------------------------
// cols[i], i = row * 9c + (ky*3 + kx)*c + ci with row = (b*oh + oy)*ow + ox, is x at this index.
MIRRORLAB_HD inline std::size_t im2col_3x3_source(std::size_t i, int h, int w, int c) {
  const std::size_t oh = static_cast<std::size_t>(h - 2), ow = static_cast<std::size_t>(w - 2);
  const std::size_t cc = static_cast<std::size_t>(c), patch = 9 * cc;
  const std::size_t row = i / patch, col = i % patch;
  const std::size_t ky = col / (3 * cc), kx = (col / cc) % 3, ci = col % cc;
  const std::size_t ox = row % ow, oy = (row / ow) % oh, b = row / (ow * oh);
  return ((b * static_cast<std::size_t>(h) + oy + ky) * static_cast<std::size_t>(w) + ox + kx) *
             cc +
         ci;
}

// dx[i] of col2im (the adjoint of im2col) as a gather: the sum over the (up to 9) output pixels
// whose window covers pixel (y, x). The CPU reference adds them output pixel by output pixel in
// row-major order (oy, then ox ascending), i.e. ky = y - oy and kx = x - ox descending: same here,
// so the sum is the reference's to the bit.
MIRRORLAB_HD inline float col2im_3x3_at(const float* dcols, std::size_t i, int h, int w, int c) {
  const int oh = h - 2, ow = w - 2;
  const std::size_t cc = static_cast<std::size_t>(c), patch = 9 * cc;
  const std::size_t ci = i % cc;
  const int x = static_cast<int>((i / cc) % static_cast<std::size_t>(w));
  const int y =
      static_cast<int>((i / (cc * static_cast<std::size_t>(w))) % static_cast<std::size_t>(h));
  const std::size_t b = i / (cc * static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  float sum = 0.0f;
  for (int ky = 2; ky >= 0; --ky) {
    const int oy = y - ky;
    if (oy < 0 || oy >= oh) continue;
    for (int kx = 2; kx >= 0; --kx) {
      const int ox = x - kx;
      if (ox < 0 || ox >= ow) continue;
      const std::size_t row = (b * static_cast<std::size_t>(oh) + static_cast<std::size_t>(oy)) *
                                  static_cast<std::size_t>(ow) +
                              static_cast<std::size_t>(ox);
      sum += dcols[row * patch + static_cast<std::size_t>(ky * 3 + kx) * cc + ci];
    }
  }
  return sum;
}

// ---- 2x2 max pooling, stride 2, floored ---------------------------------------------------------
struct PoolWinner {
  float value;
  float at;  // 0..3: top-left, top-right, bottom-left, bottom-right (as an exact small float)
};

// Output element i: the reference's comparisons in its order (the first maximum wins ties).
MIRRORLAB_HD inline PoolWinner max_pool_2x2_at(const float* x, std::size_t i, int h, int w, int c) {
  const std::size_t oh = static_cast<std::size_t>(h / 2), ow = static_cast<std::size_t>(w / 2);
  const std::size_t cc = static_cast<std::size_t>(c);
  const std::size_t ci = i % cc, ox = (i / cc) % ow, oy = (i / (cc * ow)) % oh;
  const std::size_t b = i / (cc * ow * oh);
  const std::size_t row = static_cast<std::size_t>(w) * cc;
  const float* p00 = x + (b * static_cast<std::size_t>(h) + 2 * oy) * row + 2 * ox * cc + ci;
  PoolWinner best{p00[0], 0.0f};
  if (p00[cc] > best.value) best = {p00[cc], 1.0f};
  if (p00[row] > best.value) best = {p00[row], 2.0f};
  if (p00[row + cc] > best.value) best = {p00[row + cc], 3.0f};
  return best;
}

// Input element i of the backward pass: its window's gradient if it won the window, else 0 (also
// for the floored last row and column, which belong to no window).
MIRRORLAB_HD inline float max_pool_2x2_backward_at(const float* dy, const float* which,
                                                   std::size_t i, int h, int w, int c) {
  const std::size_t cc = static_cast<std::size_t>(c);
  const std::size_t ci = i % cc;
  const int x = static_cast<int>((i / cc) % static_cast<std::size_t>(w));
  const int y =
      static_cast<int>((i / (cc * static_cast<std::size_t>(w))) % static_cast<std::size_t>(h));
  const std::size_t b = i / (cc * static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  const int oh = h / 2, ow = w / 2, oy = y / 2, ox = x / 2;
  if (oy >= oh || ox >= ow) return 0.0f;
  const std::size_t o = ((b * static_cast<std::size_t>(oh) + static_cast<std::size_t>(oy)) *
                             static_cast<std::size_t>(ow) +
                         static_cast<std::size_t>(ox)) *
                            cc +
                        ci;
  return which[o] == static_cast<float>((y % 2) * 2 + x % 2) ? dy[o] : 0.0f;
}

}  // namespace mirrorlab::core::elements
