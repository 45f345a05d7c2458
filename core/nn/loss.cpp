#include "core/nn/loss.h"

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

void check_labels(std::span<const std::uint8_t> labels, int classes) {
  for (std::uint8_t label : labels) {
    if (label >= classes) {
      throw std::invalid_argument("label " + std::to_string(label) + " is out of range for " +
                                  std::to_string(classes) + " classes (labels must be 0 to " +
                                  std::to_string(classes - 1) + ")");
    }
  }
}

void enqueue_softmax_cross_entropy(Ops& ops, const Tensor& logits,
                                   std::span<const std::uint8_t> labels,
                                   const std::uint8_t* device_labels, float grad_scale,
                                   Tensor* grad_logits, vgpu::MemoryArena* arena,
                                   LossStats* stats) {
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
  check_labels(labels, classes);
  if (grad_logits != nullptr) {
    if (arena != nullptr) {
      grad_logits->ensure(*arena, logits.shape(), "logits gradient");
    } else {
      grad_logits->ensure(logits.shape(), "logits gradient");
    }
  }
  ops.softmax_cross_entropy(logits.data(), device_labels, batch, classes, grad_scale,
                            grad_logits != nullptr ? grad_logits->data() : nullptr, stats);
}

LossStats softmax_cross_entropy(const Tensor& logits, std::span<const std::uint8_t> labels,
                                float grad_scale, Tensor* grad_logits, vgpu::MemoryArena* arena) {
  LossStats stats;
  enqueue_softmax_cross_entropy(cpu_ops(), logits, labels, labels.data(), grad_scale, grad_logits,
                                arena, &stats);
  return stats;
}

}  // namespace mirrorlab::core
