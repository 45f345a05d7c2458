// Optimizer updates on the GPU: SGD (with or without momentum), Adam, Nadam. CPU references:
// sgd_update, adam_update, nadam_update (kernels_cpu_nn.cpp), same float expressions, written
// once in kernel_elements_train.h (where the tests run them on the CPU, bit for bit against the
// references); the per-step scalars (bias corrections, Nadam's schedule) come computed on the
// host in double. nvcc may contract a*b + c into one fused multiply-add on the GPU: the last bit
// can differ from the CPU, never between replicas (they all run this same kernel on the same
// all-reduced gradient).
#include "core/nn/cuda/kernels_cuda.h"
#include "core/nn/kernel_elements_train.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels: grid-stride loops over kernel_elements_train.h
// ---------------------------------------------------------------------------------------------
__global__ void sgd_kernel(float* __restrict__ params, const float* __restrict__ grads,
                           std::size_t n, float lr) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    elements::sgd_at(params, grads, i, lr);
  }
}

__global__ void sgd_momentum_kernel(float* __restrict__ params, const float* __restrict__ grads,
                                    float* __restrict__ velocity, std::size_t n, float lr,
                                    float momentum) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    elements::sgd_momentum_at(params, grads, velocity, i, lr, momentum);
  }
}

__global__ void adam_kernel(float* __restrict__ params, const float* __restrict__ grads,
                            float* __restrict__ m, float* __restrict__ v, std::size_t n,
                            AdamStep s) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    elements::adam_at(params, grads, m, v, i, s);
  }
}

__global__ void nadam_kernel(float* __restrict__ params, const float* __restrict__ grads,
                             float* __restrict__ m, float* __restrict__ v, std::size_t n,
                             NadamStep s) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    elements::nadam_at(params, grads, m, v, i, s);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                float momentum, cudaStream_t stream) {
  if (velocity == nullptr) {
    launch_elementwise(sgd_kernel, n, stream, params, grads, n, lr);
  } else {
    launch_elementwise(sgd_momentum_kernel, n, stream, params, grads, velocity, n, lr, momentum);
  }
}

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& step, cudaStream_t stream) {
  launch_elementwise(adam_kernel, n, stream, params, grads, m, v, n, step);
}

void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const NadamStep& step, cudaStream_t stream) {
  launch_elementwise(nadam_kernel, n, stream, params, grads, m, v, n, step);
}

}  // namespace mirrorlab::core::cuda
