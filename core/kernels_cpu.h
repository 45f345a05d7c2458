// CPU kernels. Each has a plain reference; gemm() goes through OpenBLAS when the build has it
// (one BLAS thread per calling thread: each virtual GPU's stream is one core's worth of work).
#pragma once

#include <cstddef>

namespace mirrorlab::core {

// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C. lda/ldb/ldc are row strides of
// A, B, C as stored. Any of M, N, K may be 0 (then C is only scaled by beta).
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);
void gemm_reference(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Called once at start-up: BLAS runs single-threaded inside each caller.
void set_blas_single_threaded();
bool have_blas();

// 3x3 "valid" convolution patches, NHWC. x: [batch, h, w, c] -> cols: [batch*(h-2)*(w-2), 9*c]
// with column index (ky*3 + kx)*c + ci.
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols);
// Adjoint of im2col_3x3: dx (zeroed first) += scatter of dcols.
void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx);

}  // namespace mirrorlab::core
