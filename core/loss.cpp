#include "core/loss.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace mirrorlab::core {

LossStats& LossStats::operator+=(const LossStats& o) {
  loss_sum += o.loss_sum;
  correct += o.correct;
  correct_top5 += o.correct_top5;
  count += o.count;
  return *this;
}

LossStats softmax_cross_entropy(const Tensor& logits, std::span<const std::uint8_t> labels,
                                float grad_scale, Tensor* grad_logits, vgpu::MemoryArena* arena) {
  if (logits.shape().size() != 2) {
    throw std::invalid_argument(
        "softmax_cross_entropy wants logits of shape (batch, classes), got " +
        shape_to_string(logits.shape()));
  }
  const int batch = logits.dim(0), classes = logits.dim(1);
  if (labels.size() != static_cast<std::size_t>(batch)) {
    throw std::invalid_argument("softmax_cross_entropy got " + std::to_string(labels.size()) +
                                " labels for " + std::to_string(batch) + " rows of logits");
  }
  // Check every label before writing anything, so a bad batch leaves no half-written gradient.
  for (std::uint8_t label : labels) {
    if (label >= classes) {
      throw std::invalid_argument("label " + std::to_string(label) + " is out of range for " +
                                  std::to_string(classes) + " classes (labels must be 0 to " +
                                  std::to_string(classes - 1) + ")");
    }
  }
  if (grad_logits != nullptr) {
    if (arena != nullptr) {
      grad_logits->ensure(*arena, logits.shape(), "logits gradient");
    } else {
      grad_logits->ensure(logits.shape(), "logits gradient");
    }
  }

  LossStats stats;
  stats.count = batch;
  for (int r = 0; r < batch; ++r) {
    const float* z = logits.data() + static_cast<std::size_t>(r) * classes;
    const int label = labels[static_cast<std::size_t>(r)];
    // Stable log-sum-exp: subtract the row's maximum so exp() never overflows.
    int argmax = 0;
    for (int j = 1; j < classes; ++j) {
      if (z[j] > z[argmax]) argmax = j;
    }
    const double max = z[argmax];
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(z[j]) - max);
    stats.loss_sum += std::log(sum) - (static_cast<double>(z[label]) - max);
    stats.correct += argmax == label;
    // Top 5: the label's logit is among the 5 largest when fewer than 5 logits beat it strictly
    // (so ties count in the label's favour, as tf.math.in_top_k does).
    int greater = 0;
    for (int j = 0; j < classes; ++j) greater += z[j] > z[label];
    stats.correct_top5 += greater < 5;
    if (grad_logits != nullptr) {
      float* g = grad_logits->data() + static_cast<std::size_t>(r) * classes;
      const double inv_sum = 1.0 / sum;
      for (int j = 0; j < classes; ++j) {
        const double p = std::exp(static_cast<double>(z[j]) - max) * inv_sum;
        g[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * grad_scale);
      }
    }
  }
  return stats;
}

}  // namespace mirrorlab::core
