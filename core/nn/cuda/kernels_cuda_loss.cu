// Softmax cross-entropy on the GPU with its stats (loss sum, correct, top-5).
// CPU reference: softmax_cross_entropy_rows (kernels_cpu_nn.cpp).
//
// Two kernels: one thread per row does the reference's per-row work in double (a row is 10
// classes: too small to split), writing the gradient and the row's stats; then one block sums
// the rows' stats in a fixed order (each thread a strided slice, then a tree), so the loss sum is
// the same bits on every run. The sums stay on the GPU; CudaOps copies them to pinned memory.
// Both kernels' steps are in kernel_elements_train.h; the tree needs shared memory and
// __syncthreads, so it is not a function per element: sum_loss_rows_as_the_block runs its steps
// on the host in the block's order, and the tests check that against the reference.
#include "core/nn/cuda/kernels_cuda.h"
#include "core/nn/kernel_elements_train.h"

namespace mirrorlab::core::cuda {
namespace {

// Static shared memory of the sum's block: far below the 48 KiB every card has.
static_assert(sizeof(LossSums) * elements::kLossSumThreads <= 48 * 1024);

// ---------------------------------------------------------------------------------------------
// GPU kernels
// ---------------------------------------------------------------------------------------------
__global__ void softmax_cross_entropy_rows_kernel(const float* __restrict__ logits,
                                                  const std::uint8_t* __restrict__ labels,
                                                  int batch, int classes, float grad_scale,
                                                  float* __restrict__ grad,
                                                  LossRow* __restrict__ rows) {
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= static_cast<std::size_t>(batch)) return;
  rows[r] = elements::softmax_cross_entropy_row(logits, labels, static_cast<int>(r), classes,
                                                grad_scale, grad);
}

__global__ void sum_loss_rows_kernel(const LossRow* __restrict__ rows, int batch,
                                     LossSums* __restrict__ sums) {
  __shared__ LossSums partial[elements::kLossSumThreads];
  const int t = static_cast<int>(threadIdx.x);
  partial[t] = elements::loss_partial(rows, batch, t, elements::kLossSumThreads);
  __syncthreads();
  for (int half = elements::kLossSumThreads / 2; half > 0; half /= 2) {
    if (t < half) elements::add_loss_sums(partial[t], partial[t + half]);
    __syncthreads();
  }
  if (t == 0) *sums = partial[0];
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------------------------
void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch, int classes,
                           float grad_scale, float* grad, LossRow* rows, LossSums* sums,
                           cudaStream_t stream) {
  const vgpu::LaunchShape per_row = vgpu::one_thread_per_row_shape(batch);
  if (!per_row.empty()) {
    softmax_cross_entropy_rows_kernel<<<per_row.blocks, per_row.threads, per_row.shared_bytes,
                                        stream>>>(logits, labels, batch, classes, grad_scale, grad,
                                                  rows);
    MIRRORLAB_CUDA_CHECK_LAUNCH();
  }
  // Also for an empty shard: the sums must read 0, not the last call's.
  const vgpu::LaunchShape block = vgpu::single_block_shape(elements::kLossSumThreads);
  sum_loss_rows_kernel<<<block.blocks, block.threads, block.shared_bytes, stream>>>(rows, batch,
                                                                                    sums);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::core::cuda
