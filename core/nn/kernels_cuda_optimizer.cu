// Optimizer updates on the GPU: SGD (with or without momentum), Adam, Nadam. CPU references:
// sgd_update, adam_update, nadam_update (kernels_cpu_nn.cpp), same float expressions; the per-step
// scalars (bias corrections, Nadam's schedule) come computed on the host in double.
// nvcc may contract a*b + c into one fused multiply-add: the last bit can differ from the CPU,
// never between replicas (they all run this same kernel on the same all-reduced gradient).
#include "virtualgpu/cuda/cuda_check.h"
#include "core/nn/kernels_cuda.h"

namespace mirrorlab::core::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// GPU kernels
// ---------------------------------------------------------------------------------------------
__global__ void sgd_kernel(float* __restrict__ params, const float* __restrict__ grads,
                           std::size_t n, float lr) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) params[i] -= lr * grads[i];
}

__global__ void sgd_momentum_kernel(float* __restrict__ params, const float* __restrict__ grads,
                                    float* __restrict__ velocity, std::size_t n, float lr,
                                    float momentum) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float v = momentum * velocity[i] - lr * grads[i];
    velocity[i] = v;
    params[i] += v;
  }
}

// Adam's and Nadam's shared moment update of one element's m and v.
__device__ inline void update_moments(float g, float beta1, float beta2, float& m, float& v) {
  m = beta1 * m + (1.0f - beta1) * g;
  v = beta2 * v + (1.0f - beta2) * g * g;
}

__global__ void adam_kernel(float* __restrict__ params, const float* __restrict__ grads,
                            float* __restrict__ m, float* __restrict__ v, std::size_t n,
                            AdamStep s) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    float mi = m[i], vi = v[i];
    update_moments(grads[i], s.beta1, s.beta2, mi, vi);
    m[i] = mi;
    v[i] = vi;
    params[i] -= s.lr_t * mi / (sqrtf(vi) + s.epsilon);
  }
}

__global__ void nadam_kernel(float* __restrict__ params, const float* __restrict__ grads,
                             float* __restrict__ m, float* __restrict__ v, std::size_t n,
                             NadamStep s) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float g = grads[i];
    float mi = m[i], vi = v[i];
    update_moments(g, s.beta1, s.beta2, mi, vi);
    m[i] = mi;
    v[i] = vi;
    const float m_bar = s.c_g * (g * s.g_scale) + s.c_m * (mi * s.m_scale);
    params[i] -= s.lr * m_bar / (sqrtf(vi * s.v_scale) + s.epsilon);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------
void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                float momentum, cudaStream_t stream) {
  if (n == 0) return;
  if (velocity == nullptr) {
    sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, n, lr);
  } else {
    sgd_momentum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, velocity, n, lr,
                                                                momentum);
  }
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& step, cudaStream_t stream) {
  if (n == 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, m, v, n, step);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const NadamStep& step, cudaStream_t stream) {
  if (n == 0) return;
  nadam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, m, v, n, step);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::core::cuda
