// Single-device training with no devices, no threads and no all-reduce: the reference that
// mirrored training must match (tests), and the baseline its overhead is measured against
// (bench). Same model, optimizer, initialisation and loss scaling as a MirroredStrategy.
#pragma once

#include <memory>
#include <vector>

#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

class PlainTrainer {
 public:
  PlainTrainer(vgpu::MemoryArena& arena, const StrategyOptions& options);
  // forward, loss averaged over the batch, backward, update.
  LossStats train_step(const GlobalBatch& batch);
  Model& model() { return *model_; }

 private:
  vgpu::MemoryArena* arena_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  Tensor images_, grad_logits_;
  std::vector<std::uint8_t> labels_;
};

}  // namespace mirrorlab::core
