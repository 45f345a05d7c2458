// CPU kernels: GEMM (OpenBLAS or the plain reference) and the 3x3 im2col/col2im pair.
//
// Index
//   1. GEMM reference (netlib order: scale C by beta, then accumulate; vectorisable inner loops)
//   2. GEMM front end (OpenBLAS when built with it)
//   3. im2col / col2im for 3x3 valid convolutions, NHWC
#include "core/nn/cpu/kernels_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "virtualgpu/memory/host_memory.h"

#ifdef MIRRORLAB_HAVE_BLAS
#include <cblas.h>
// OpenBLAS-specific; not in every cblas.h, so declared here.
extern "C" void openblas_set_num_threads(int);
#endif

namespace mirrorlab::core {
namespace {

// C[m,n] := beta * C, where beta == 0 means "overwrite" (a NaN in C does not survive), as BLAS.
void scale_c(int m, int n, float beta, float* c, int ldc) {
  if (beta == 1.0f) return;
  for (int i = 0; i < m; ++i) {
    float* row = c + static_cast<std::ptrdiff_t>(i) * ldc;
    if (beta == 0.0f) {
      std::memset(row, 0, sizeof(float) * static_cast<std::size_t>(n));
    } else {
      for (int j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// sum_p a[p] * b[p] with 8 independent partial sums, so the compiler can vectorise it without
// -ffast-math (a single float accumulator forces one add after another).
float dot(const float* a, const float* b, int k) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int l = 0; l < 8; ++l) part[l] += a[p + l] * b[p + l];
  }
  float sum = 0;
  for (; p < k; ++p) sum += a[p] * b[p];
  return sum + (((part[0] + part[1]) + (part[2] + part[3])) +
                ((part[4] + part[5]) + (part[6] + part[7])));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. GEMM reference
// ---------------------------------------------------------------------------------------------
// Row-major throughout. Loop orders are chosen so that the innermost loop walks memory
// contiguously: i-k-j (a row of B axpy'd into a row of C) when B is not transposed, and a dot
// product over k when it is (then both A's row and B's row are contiguous in k).
void gemm_reference(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  const auto at = [&](int i, int p) {
    return trans_a ? a[static_cast<std::ptrdiff_t>(p) * lda + i]
                   : a[static_cast<std::ptrdiff_t>(i) * lda + p];
  };
  if (!trans_b) {
    scale_c(m, n, beta, c, ldc);
    for (int i = 0; i < m; ++i) {
      float* __restrict crow = c + static_cast<std::ptrdiff_t>(i) * ldc;
      for (int p = 0; p < k; ++p) {
        const float aip = alpha * at(i, p);
        const float* __restrict brow = b + static_cast<std::ptrdiff_t>(p) * ldb;
        for (int j = 0; j < n; ++j) crow[j] += aip * brow[j];
      }
    }
    return;
  }
  // B transposed: C[i,j] = alpha * dot(A row i, B row j) + beta * C[i,j].
  const float* arow = a;
  float* gathered = nullptr;
  std::unique_ptr<float[]> column;  // A transposed: gather its column i once per row of C
  if (trans_a) {
    column = std::make_unique<float[]>(static_cast<std::size_t>(k));
    gathered = column.get();
  }
  for (int i = 0; i < m; ++i) {
    if (trans_a) {
      for (int p = 0; p < k; ++p) gathered[p] = at(i, p);
      arow = gathered;
    } else {
      arow = a + static_cast<std::ptrdiff_t>(i) * lda;
    }
    float* crow = c + static_cast<std::ptrdiff_t>(i) * ldc;
    for (int j = 0; j < n; ++j) {
      const float s = alpha * dot(arow, b + static_cast<std::ptrdiff_t>(j) * ldb, k);
      crow[j] = beta == 0.0f ? s : s + beta * crow[j];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. GEMM front end
// ---------------------------------------------------------------------------------------------
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // Empty sum (an empty shard's weight gradient): BLAS would reject lda == 0, and C must
    // still come out as beta * C.
    scale_c(m, n, beta, c, ldc);
    return;
  }
#ifdef MIRRORLAB_HAVE_BLAS
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
  gemm_reference(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void set_blas_single_threaded() {
#ifdef MIRRORLAB_HAVE_BLAS
  // Each virtual GPU is one thread (its stream); OpenBLAS's own thread pool would make N
  // replicas fight over the cores and hide the cost model the lessons talk about.
  openblas_set_num_threads(1);
#endif
}

void check_blas_work_memory(int threads) {
#ifdef MIRRORLAB_HAVE_BLAS
  constexpr std::size_t kPerThreadBytes = std::size_t{200} << 20;  // 128 + 64 + 8 MiB
  constexpr std::size_t kRestBytes = std::size_t{128} << 20;
  if (threads <= 0 || (vgpu::can_map_blocks(kPerThreadBytes, threads) &&
                       vgpu::can_map_blocks(kPerThreadBytes * threads + kRestBytes, 1))) {
    return;
  }
  throw HostMemoryError(
      "the host cannot give this run the memory its " + std::to_string(threads) +
      " CPU device threads need: about 200 MiB each (OpenBLAS's 128 MiB work buffer, the "
      "thread's heap and stack) and 128 MiB for the data and models, " +
      std::to_string((kPerThreadBytes * threads + kRestBytes) >> 20) +
      " MiB in all, but this process has " + vgpu::query_host_memory().describe() +
      ". Raise that limit, or train on fewer virtual GPUs");
#else
  (void)threads;
#endif
}

std::size_t first_nonfinite(const float* x, std::size_t n) {
  constexpr std::uint32_t kExponent = 0x7f800000u;
  constexpr std::size_t kBlock = 4096;
  for (std::size_t begin = 0; begin < n; begin += kBlock) {
    const std::size_t end = std::min(n, begin + kBlock);
    std::uint32_t widest = 0;
    for (std::size_t i = begin; i < end; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, x + i, sizeof bits);
      widest = std::max(widest, bits & kExponent);
    }
    if (widest != kExponent) continue;
    for (std::size_t i = begin; i < end; ++i) {
      if (!std::isfinite(x[i])) return i;
    }
  }
  return n;
}

bool have_blas() {
#ifdef MIRRORLAB_HAVE_BLAS
  return true;
#else
  return false;
#endif
}

// ---------------------------------------------------------------------------------------------
// 3. im2col / col2im, 3x3 valid, NHWC
// ---------------------------------------------------------------------------------------------
// For output pixel (oy, ox), kernel row ky covers input pixels (oy+ky, ox..ox+2): 3*c floats
// that are contiguous in NHWC, and land on columns (ky*3 + 0..2)*c + ci, contiguous too. So each
// row of `cols` is three copies of 3*c floats.
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols) {
  const int oh = h - 2, ow = w - 2;
  if (batch <= 0 || oh <= 0 || ow <= 0) return;
  const std::size_t run = 3 * static_cast<std::size_t>(c);
  const std::size_t row_stride = static_cast<std::size_t>(w) * c;
  for (int b = 0; b < batch; ++b) {
    const float* image = x + static_cast<std::size_t>(b) * h * row_stride;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        for (int ky = 0; ky < 3; ++ky) {
          const float* src = image + (oy + ky) * row_stride + static_cast<std::size_t>(ox) * c;
          std::memcpy(cols + ky * run, src, run * sizeof(float));
        }
        cols += 3 * run;
      }
    }
  }
}

void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx) {
  if (batch <= 0 || h <= 0 || w <= 0 || c <= 0) return;
  const std::size_t row_stride = static_cast<std::size_t>(w) * c;
  std::memset(dx, 0, sizeof(float) * static_cast<std::size_t>(batch) * h * row_stride);
  const int oh = h - 2, ow = w - 2;
  if (oh <= 0 || ow <= 0) return;
  const int run = 3 * c;
  for (int b = 0; b < batch; ++b) {
    float* image = dx + static_cast<std::size_t>(b) * h * row_stride;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        for (int ky = 0; ky < 3; ++ky) {
          float* __restrict dst = image + (oy + ky) * row_stride + static_cast<std::size_t>(ox) * c;
          const float* __restrict src = dcols + ky * run;
          for (int t = 0; t < run; ++t) dst[t] += src[t];
        }
        dcols += 3 * run;
      }
    }
  }
}

}  // namespace mirrorlab::core
