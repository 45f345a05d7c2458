// Softmax + sparse categorical cross-entropy (from logits) and the accuracy metrics.
//
// The loss is averaged over the GLOBAL batch, never over one replica's shard: each replica
// scales by 1/global_batch_size, so the all-reduced (summed) gradient of N replicas is exactly
// the gradient one device computes on the whole batch (TensorFlow's compute_average_loss).
#pragma once

#include <cstdint>
#include <span>

#include "core/nn/ops.h"
#include "core/nn/tensor.h"

namespace mirrorlab::core {

struct LossStats {
  double loss_sum = 0;            // sum over the shard of -log softmax(logits)[label]
  std::int64_t correct = 0;       // argmax == label
  std::int64_t correct_top5 = 0;  // label among the 5 largest logits
  std::int64_t count = 0;
  LossStats& operator+=(const LossStats& o);
};

// logits: [b, classes]; labels: b values in [0, classes). When grad_logits is not null it is
// given shape [b, classes] and filled with (softmax - onehot(label)) * grad_scale, where
// grad_scale = 1 / global_batch_size. Numerically stable (max subtracted). Throws
// std::invalid_argument for a label out of range.
// On the CPU (host tensors): the stats are returned at once.
LossStats softmax_cross_entropy(const Tensor& logits, std::span<const std::uint8_t> labels,
                                float grad_scale, Tensor* grad_logits,
                                vgpu::MemoryArena* arena = nullptr);

// Throws std::invalid_argument, naming it, for a label that is not below `classes`.
void check_labels(std::span<const std::uint8_t> labels, int classes);

// On any device: `labels` (host) are checked, `device_labels` (the same values in the device's
// memory; labels.data() on a host device) are what the kernel reads. The work is enqueued on
// `ops`; *stats holds the sums once ops.wait_loss_stats() has returned, so a caller can enqueue
// the backward pass first and wait once, late.
void enqueue_softmax_cross_entropy(Ops& ops, const Tensor& logits,
                                   std::span<const std::uint8_t> labels,
                                   const std::uint8_t* device_labels, float grad_scale,
                                   Tensor* grad_logits, vgpu::MemoryArena* arena, LossStats* stats);

}  // namespace mirrorlab::core
