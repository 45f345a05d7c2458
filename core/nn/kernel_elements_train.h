// The work per element of the CUDA kernels of training (cuda/kernels_cuda_loss.cu,
// cuda/kernels_cuda_optimizer.cu), as functions both sides compile (MIRRORLAB_HD); see
// kernel_elements.h. On the CPU they give the references' bits (kernels_cpu_nn.cpp), which
// tests/core/nn/test_kernel_elements.cpp checks over every index; on the GPU two things may differ
// in the last bit, never between replicas: nvcc fuses a*b + c into one multiply-add, and CUDA's
// double exp and log are not glibc's.
//
// The loss's sum over rows is one block of shared memory (a tree): it cannot be a function per
// element, so its steps are (loss_partial, add_loss_sums) and sum_loss_rows_as_the_block runs
// them on the host in the block's order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/nn/ops.h"
#include "virtualgpu/cuda/host_device.h"

namespace mirrorlab::core::elements {

// ---- softmax cross-entropy ----------------------------------------------------------------------
// One row's share of the loss and its statistics.
struct LossRow {
  double loss;
  int correct, top5;
};
// The sums of one call, as the GPU writes them (then copied to the host).
struct LossSums {
  double loss_sum;
  long long correct, correct_top5;
};

// Row r: the CPU reference's work for that row, in double (a row is 10 classes: too small to
// split over threads). Writes the row's gradient when grad is not null.
MIRRORLAB_HD inline LossRow softmax_cross_entropy_row(const float* logits,
                                                      const std::uint8_t* labels, int r,
                                                      int classes, float grad_scale, float* grad) {
  const float* z = logits + static_cast<std::size_t>(r) * static_cast<std::size_t>(classes);
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
  if (grad != nullptr) {
    float* g = grad + static_cast<std::size_t>(r) * static_cast<std::size_t>(classes);
    const double inv_sum = 1.0 / sum;
    for (int j = 0; j < classes; ++j) {
      const double p = exp(static_cast<double>(z[j]) - max) * inv_sum;
      g[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * grad_scale);
    }
  }
  return LossRow{log(sum) - (static_cast<double>(z[label]) - max), argmax == label ? 1 : 0,
                 greater < 5 ? 1 : 0};
}

// The threads of the one block that sums the rows (a power of two: the tree halves it).
inline constexpr int kLossSumThreads = 256;

// Thread t's strided slice of the rows: t, t + threads, t + 2*threads, ...
MIRRORLAB_HD inline LossSums loss_partial(const LossRow* rows, int batch, int t, int threads) {
  LossSums s{0.0, 0, 0};
  for (int r = t; r < batch; r += threads) {
    s.loss_sum += rows[r].loss;
    s.correct += rows[r].correct;
    s.correct_top5 += rows[r].top5;
  }
  return s;
}

MIRRORLAB_HD inline void add_loss_sums(LossSums& into, const LossSums& other) {
  into.loss_sum += other.loss_sum;
  into.correct += other.correct;
  into.correct_top5 += other.correct_top5;
}

// The block's sum on the host, in its order: every thread's slice, then the tree (at each level
// t < half adds t + half). The same double additions in the same order: the GPU's bits.
inline LossSums sum_loss_rows_as_the_block(const LossRow* rows, int batch) {
  LossSums partial[kLossSumThreads];
  for (int t = 0; t < kLossSumThreads; ++t)
    partial[t] = loss_partial(rows, batch, t, kLossSumThreads);
  for (int half = kLossSumThreads / 2; half > 0; half /= 2) {
    for (int t = 0; t < half; ++t) add_loss_sums(partial[t], partial[t + half]);
  }
  return partial[0];
}

// ---- optimizer updates (float, as the weights; the step's scalars come computed) ----------------
MIRRORLAB_HD inline void sgd_at(float* params, const float* grads, std::size_t i, float lr) {
  params[i] -= lr * grads[i];
}

MIRRORLAB_HD inline void sgd_momentum_at(float* params, const float* grads, float* velocity,
                                         std::size_t i, float lr, float momentum) {
  const float v = momentum * velocity[i] - lr * grads[i];
  velocity[i] = v;
  params[i] += v;
}

// Adam's and Nadam's shared moment update of one element's m and v.
MIRRORLAB_HD inline void update_moments(float g, float beta1, float beta2, float& m, float& v) {
  m = beta1 * m + (1.0f - beta1) * g;
  v = beta2 * v + (1.0f - beta2) * g * g;
}

MIRRORLAB_HD inline void adam_at(float* params, const float* grads, float* m, float* v,
                                 std::size_t i, const AdamStep& s) {
  float mi = m[i], vi = v[i];
  update_moments(grads[i], s.beta1, s.beta2, mi, vi);
  m[i] = mi;
  v[i] = vi;
  params[i] -= s.lr_t * mi / (sqrtf(vi) + s.epsilon);
}

MIRRORLAB_HD inline void nadam_at(float* params, const float* grads, float* m, float* v,
                                  std::size_t i, const NadamStep& s) {
  const float g = grads[i];
  float mi = m[i], vi = v[i];
  update_moments(g, s.beta1, s.beta2, mi, vi);
  m[i] = mi;
  v[i] = vi;
  const float m_bar = s.c_g * (g * s.g_scale) + s.c_m * (mi * s.m_scale);
  params[i] -= s.lr * m_bar / (sqrtf(vi * s.v_scale) + s.epsilon);
}

}  // namespace mirrorlab::core::elements
