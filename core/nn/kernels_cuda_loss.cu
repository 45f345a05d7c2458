// Softmax cross-entropy on the GPU with its stats (loss sum, correct, top-5).
// CPU reference: softmax_cross_entropy_rows (kernels_cpu_nn.cpp).
//
// Two kernels: one thread per row does the reference's per-row work in double (a row is 10
// classes: too small to split), writing the gradient and the row's stats; then one block sums
// the rows' stats in a fixed order (each thread a strided slice, then a tree), so the loss sum is
// the same bits on every run. The sums stay on the GPU; CudaOps copies them to pinned memory.
#include "virtualgpu/cuda/cuda_check.h"
#include "core/nn/kernels_cuda.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels
// ---------------------------------------------------------------------------------------------
__global__ void softmax_cross_entropy_rows_kernel(const float* __restrict__ logits,
                                                  const std::uint8_t* __restrict__ labels,
                                                  int batch, int classes, float grad_scale,
                                                  float* __restrict__ grad,
                                                  LossRow* __restrict__ rows) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= batch) return;
  const float* z = logits + static_cast<std::size_t>(r) * classes;
  const int label = labels[r];
  int argmax = 0;
  for (int j = 1; j < classes; ++j) {
    if (z[j] > z[argmax]) argmax = j;
  }
  const double max = z[argmax];
  double sum = 0;
  for (int j = 0; j < classes; ++j) sum += exp(static_cast<double>(z[j]) - max);
  int greater = 0;
  for (int j = 0; j < classes; ++j) greater += z[j] > z[label];
  rows[r] = LossRow{log(sum) - (static_cast<double>(z[label]) - max), argmax == label ? 1 : 0,
                    greater < 5 ? 1 : 0};
  if (grad != nullptr) {
    float* g = grad + static_cast<std::size_t>(r) * classes;
    const double inv_sum = 1.0 / sum;
    for (int j = 0; j < classes; ++j) {
      const double p = exp(static_cast<double>(z[j]) - max) * inv_sum;
      g[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * grad_scale);
    }
  }
}

constexpr int kSumThreads = 256;

__global__ void sum_loss_rows_kernel(const LossRow* __restrict__ rows, int batch,
                                     LossSums* __restrict__ sums) {
  __shared__ double loss[kSumThreads];
  __shared__ long long correct[kSumThreads], top5[kSumThreads];
  const int t = threadIdx.x;
  double l = 0;
  long long c = 0, c5 = 0;
  for (int r = t; r < batch; r += kSumThreads) {
    l += rows[r].loss;
    c += rows[r].correct;
    c5 += rows[r].top5;
  }
  loss[t] = l;
  correct[t] = c;
  top5[t] = c5;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      loss[t] += loss[t + half];
      correct[t] += correct[t + half];
      top5[t] += top5[t + half];
    }
    __syncthreads();
  }
  if (t == 0) *sums = LossSums{loss[0], correct[0], top5[0]};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------------------------
void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch, int classes,
                           float grad_scale, float* grad, LossRow* rows, LossSums* sums,
                           cudaStream_t stream) {
  if (batch > 0) {
    const unsigned blocks = static_cast<unsigned>((batch + kThreads - 1) / kThreads);
    softmax_cross_entropy_rows_kernel<<<blocks, kThreads, 0, stream>>>(
        logits, labels, batch, classes, grad_scale, grad, rows);
    MIRRORLAB_CUDA_CHECK_LAUNCH();
  }
  // Also for an empty shard: the sums must read 0, not the last call's.
  sum_loss_rows_kernel<<<1, kSumThreads, 0, stream>>>(rows, batch, sums);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::core::cuda
