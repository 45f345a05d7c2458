// CPU kernels: the references every other implementation (CudaOps) is tested against, and what
// CpuOps runs. gemm() goes through OpenBLAS when the build has it (one BLAS thread per calling
// thread: each virtual GPU's stream is one core's worth of work). Matrix products and im2col are
// in kernels_cpu.cpp; the element-wise, pooling, loss and optimizer kernels in kernels_cpu_nn.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "core/nn/ops.h"

namespace mirrorlab::core {

// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C. lda/ldb/ldc are row strides of
// A, B, C as stored. Any of M, N, K may be 0 (then C is only scaled by beta).
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);
void gemm_reference(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Called once at start-up: BLAS runs single-threaded inside each caller.
void set_blas_single_threaded();

// OpenBLAS maps a work buffer for every thread that calls it (Debian 12's 0.3.21 asks malloc for
// 128 MiB + 4 KiB) and, when that mapping fails, retries for ever: a step would hang inside
// sgemm. Under a tight `ulimit -v` that is what happens first. Throws HostMemoryError when the
// address space the run will need cannot be mapped now, so it stops before its first step,
// saying so: for each of `threads` CPU device threads, OpenBLAS's buffer, glibc's 64 MiB heap of
// the thread and its stack (measured: a 2-GPU CNN run needs about 455 MB beyond what is mapped
// when the strategy is built, a 4-GPU run about 850 MB), and 128 MiB for the data and models.
// Nothing without OpenBLAS.
void check_blas_work_memory(int threads);

// The host cannot give the process what it needs; what() says how much and why.
class HostMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
bool have_blas();

// The index of the first NaN or infinity in x[0, n), or n. A float is not finite exactly when its
// exponent bits are all ones; blocks are scanned for that with an integer reduction (which the
// compiler vectorises), and only a block that has one is searched element by element.
std::size_t first_nonfinite(const float* x, std::size_t n);

// 3x3 "valid" convolution patches, NHWC. x: [batch, h, w, c] -> cols: [batch*(h-2)*(w-2), 9*c]
// with column index (ky*3 + kx)*c + ci.
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols);
// Adjoint of im2col_3x3: dx (zeroed first) += scatter of dcols.
void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx);

// out[r, j] = bias[j] for every row: the "+ b" of y = x W + b, before gemm adds x W (beta = 1).
void broadcast_rows(const float* bias, int rows, int cols, float* out);
// db[j] = sum_r dy[r, j] (rows in order).
void column_sums(const float* dy, int rows, int cols, float* db);

// y = max(x, 0); dx = dy where x > 0, else 0.
void relu_forward(const float* x, std::size_t n, float* y);
void relu_backward(const float* x, const float* dy, std::size_t n, float* dx);

// 2x2 max pooling, stride 2, NHWC, odd sizes floored. `which` records the winning window position
// (0..3, first maximum on ties, as exact small floats) for backward, which routes each gradient
// there and writes 0 everywhere else (the floored edges included).
void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which);
void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                           float* dx);

// Softmax cross-entropy of `batch` rows (labels already checked to be < classes): sums into
// *stats (overwritten), grad (nullable) := (softmax - onehot) * grad_scale. Per row in double,
// the maximum subtracted first (stable).
void softmax_cross_entropy_rows(const float* logits, const std::uint8_t* labels, int batch,
                                int classes, float grad_scale, float* grad, LossStats* stats);

// One optimizer step over n values (formulas in ops.h / optimizer.h).
void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                float momentum);
void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& step);
void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const NadamStep& step);

}  // namespace mirrorlab::core
