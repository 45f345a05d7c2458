// Launchers of the CUDA kernels (kernels_cuda_*.cu), called by CudaOps (ops_cuda.cpp). Each
// enqueues on `stream`, checks the launch, and does nothing for an empty input. Pointers are in
// GPU memory; the semantics are those of the CPU reference of the same name in kernels_cpu.h,
// which the tests compare them with: on a GPU (tests/support/ops_agreement.cpp), and everywhere
// through the kernels' work per element (kernel_elements*.h,
// tests/core/nn/test_kernel_elements.cpp). Their launch shapes come from
// virtualgpu/cuda/launch_shape.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/nn/kernel_elements_train.h"
#include "core/nn/ops.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/launch_shape.h"

namespace mirrorlab::core::cuda {

// kernels_cuda_elementwise.cu
void broadcast_rows(const float* bias, int rows, int cols, float* out, cudaStream_t stream);
void relu_forward(const float* x, std::size_t n, float* y, cudaStream_t stream);
void relu_backward(const float* x, const float* dy, std::size_t n, float* dx, cudaStream_t stream);
void fill(float* dst, std::size_t n, float value, cudaStream_t stream);
// Queues the search for the first NaN or infinity in x[0, n): `slot` (one unsigned long long of
// GPU memory) holds its index, or n, once the stream has run it. Two launches (the slot set to n,
// then the search), no copy and no wait.
void find_nonfinite(const float* x, std::size_t n, unsigned long long* slot, cudaStream_t stream);
// c[i, j] := beta * c[i, j] for an m x n block with row stride ldc (beta == 0: zero, NaN or not).
void scale_matrix(float* c, int m, int n, int ldc, float beta, cudaStream_t stream);

// kernels_cuda_conv.cu
void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols, cudaStream_t stream);
void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx, cudaStream_t stream);
void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y, float* which,
                          cudaStream_t stream);
void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                           float* dx, cudaStream_t stream);

// kernels_cuda_loss.cu. The sums of one call, as the GPU writes them (then copied to the host),
// and the per-row scratch the loss needs (`batch` LossRows): kernel_elements_train.h.
using elements::LossRow;
using elements::LossSums;
void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch, int classes,
                           float grad_scale, float* grad, LossRow* rows, LossSums* sums,
                           cudaStream_t stream);

// kernels_cuda_optimizer.cu
void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                float momentum, cudaStream_t stream);
void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& step, cudaStream_t stream);
void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const NadamStep& step, cudaStream_t stream);

#ifdef __CUDACC__
// A grid-stride loop's start and step: for (i = first_index(); i < n; i += grid_stride()).
__device__ inline std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// Launches `kernel` over n elements with elementwise_shape(n) (virtualgpu/cuda/launch_shape.h)
// on `stream`, and checks the launch; nothing for n == 0.
template <class Kernel, class... Args>
void launch_elementwise(Kernel kernel, std::size_t n, cudaStream_t stream, Args... args) {
  const vgpu::LaunchShape shape = vgpu::elementwise_shape(n);
  if (shape.empty()) return;
  kernel<<<shape.blocks, shape.threads, shape.shared_bytes, stream>>>(args...);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}
#endif

}  // namespace mirrorlab::core::cuda
