// CPU reference kernels of the layers, the loss and the optimizers (the matrix products and
// im2col are in kernels_cpu.cpp). These loops are what CpuOps runs and what the CUDA kernels are
// compared against; their float expressions are written once, here.
//
// Index
//   1. Bias broadcast, column sums
//   2. ReLU
//   3. MaxPool 2x2
//   4. Softmax cross-entropy
//   5. Optimizer updates
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/nn/cpu/kernels_cpu.h"
#include "core/nn/loss.h"

namespace mirrorlab::core {

// ---------------------------------------------------------------------------------------------
// 1. Bias broadcast, column sums
// ---------------------------------------------------------------------------------------------
void broadcast_rows(const float* bias, int rows, int cols, float* out) {
  for (int r = 0; r < rows; ++r) {
    std::memcpy(out + static_cast<std::size_t>(r) * cols, bias, sizeof(float) * cols);
  }
}

void column_sums(const float* dy, int rows, int cols, float* db) {
  std::fill(db, db + cols, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* row = dy + static_cast<std::size_t>(r) * cols;
    for (int j = 0; j < cols; ++j) db[j] += row[j];
  }
}

// ---------------------------------------------------------------------------------------------
// 2. ReLU
// ---------------------------------------------------------------------------------------------
void relu_forward(const float* __restrict x, std::size_t n, float* __restrict y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* __restrict x, const float* __restrict dy, std::size_t n,
                   float* __restrict dx) {
  // dy is read unconditionally: a load under the condition would keep the loop scalar.
  for (std::size_t i = 0; i < n; ++i) {
    const float g = dy[i];
    dx[i] = x[i] > 0.0f ? g : 0.0f;
  }
}

// ---------------------------------------------------------------------------------------------
// 3. MaxPool 2x2, stride 2, floored
// ---------------------------------------------------------------------------------------------
void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* __restrict y,
                          float* __restrict which) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t row = static_cast<std::size_t>(w) * c;
  for (int b = 0; b < batch; ++b) {
    const float* image = x + static_cast<std::size_t>(b) * h * row;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        const float* p00 = image + (2 * oy) * row + static_cast<std::size_t>(2 * ox) * c;
        const float* p01 = p00 + c;
        const float* p10 = p00 + row;
        const float* p11 = p10 + c;
        for (int ci = 0; ci < c; ++ci) {
          float m = p00[ci], at = 0.0f;
          if (p01[ci] > m) m = p01[ci], at = 1.0f;
          if (p10[ci] > m) m = p10[ci], at = 2.0f;
          if (p11[ci] > m) m = p11[ci], at = 3.0f;
          y[ci] = m;
          which[ci] = at;
        }
        y += c;
        which += c;
      }
    }
  }
}

void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                           float* dx) {
  const std::size_t total = static_cast<std::size_t>(batch) * h * w * c;
  if (total == 0) return;
  std::memset(dx, 0, total * sizeof(float));  // floored edges get 0
  const int oh = h / 2, ow = w / 2;
  const std::size_t row = static_cast<std::size_t>(w) * c;
  for (int b = 0; b < batch; ++b) {
    float* image = dx + static_cast<std::size_t>(b) * h * row;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        float* p00 = image + (2 * oy) * row + static_cast<std::size_t>(2 * ox) * c;
        float* const corner[4] = {p00, p00 + c, p00 + row, p00 + row + c};
        for (int ci = 0; ci < c; ++ci) corner[static_cast<int>(which[ci])][ci] = dy[ci];
        dy += c;
        which += c;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Softmax cross-entropy
// ---------------------------------------------------------------------------------------------
void softmax_cross_entropy_rows(const float* logits, const std::uint8_t* labels, int batch,
                                int classes, float grad_scale, float* grad, LossStats* stats) {
  *stats = LossStats{};
  stats->count = batch;
  for (int r = 0; r < batch; ++r) {
    const float* z = logits + static_cast<std::size_t>(r) * classes;
    const int label = labels[r];
    // Stable log-sum-exp: subtract the row's maximum so exp() never overflows.
    int argmax = 0;
    for (int j = 1; j < classes; ++j) {
      if (z[j] > z[argmax]) argmax = j;
    }
    const double max = z[argmax];
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(z[j]) - max);
    stats->loss_sum += std::log(sum) - (static_cast<double>(z[label]) - max);
    stats->correct += argmax == label;
    // Top 5: the label's logit is among the 5 largest when fewer than 5 logits beat it strictly
    // (so ties count in the label's favour, as tf.math.in_top_k does).
    int greater = 0;
    for (int j = 0; j < classes; ++j) greater += z[j] > z[label];
    stats->correct_top5 += greater < 5;
    if (grad != nullptr) {
      float* g = grad + static_cast<std::size_t>(r) * classes;
      const double inv_sum = 1.0 / sum;
      for (int j = 0; j < classes; ++j) {
        const double p = std::exp(static_cast<double>(z[j]) - max) * inv_sum;
        g[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * grad_scale);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 5. Optimizer updates (per-element float, as the weights; the step scalars come in)
// ---------------------------------------------------------------------------------------------
void sgd_update(float* __restrict params, const float* __restrict grads, float* __restrict velocity,
                std::size_t n, float lr, float momentum) {
  if (velocity == nullptr) {
    for (std::size_t i = 0; i < n; ++i) params[i] -= lr * grads[i];
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    velocity[i] = momentum * velocity[i] - lr * grads[i];
    params[i] += velocity[i];
  }
}

void adam_update(float* __restrict params, const float* __restrict grads, float* __restrict m,
                 float* __restrict v, std::size_t n, const AdamStep& step) {
  const float lr_t = step.lr_t, fb1 = step.beta1, fb2 = step.beta2, eps = step.epsilon;
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    m[i] = fb1 * m[i] + (1.0f - fb1) * g;
    v[i] = fb2 * v[i] + (1.0f - fb2) * g * g;
    params[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
  }
}

void nadam_update(float* __restrict params, const float* __restrict grads, float* __restrict m,
                  float* __restrict v, std::size_t n, const NadamStep& step) {
  const float fb1 = step.beta1, fb2 = step.beta2, eps = step.epsilon, lr = step.lr;
  const float g_scale = step.g_scale, m_scale = step.m_scale, v_scale = step.v_scale;
  const float c_g = step.c_g, c_m = step.c_m;
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    m[i] = fb1 * m[i] + (1.0f - fb1) * g;
    v[i] = fb2 * v[i] + (1.0f - fb2) * g * g;
    const float g_prime = g * g_scale;
    const float m_prime = m[i] * m_scale;
    const float v_prime = v[i] * v_scale;
    const float m_bar = c_g * g_prime + c_m * m_prime;
    params[i] -= lr * m_bar / (std::sqrt(v_prime) + eps);
  }
}

}  // namespace mirrorlab::core
