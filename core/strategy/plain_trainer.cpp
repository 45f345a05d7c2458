#include "core/strategy/plain_trainer.h"

#include "core/nn/batch.h"

namespace mirrorlab::core {

PlainTrainer::PlainTrainer(vgpu::MemoryArena& arena, const StrategyOptions& options)
    : arena_(&arena),
      model_(make_model(options, arena)),
      optimizer_(make_optimizer(options.optimizer, model_->num_params(), arena)) {
  model_->init(options.seed);
}

LossStats PlainTrainer::train_step(const GlobalBatch& batch) {
  gather_batch(*batch.data, batch.indices, *arena_, images_, labels_);
  const Tensor& logits = model_->forward(images_);
  const float scale = 1.0f / static_cast<float>(batch.size() > 0 ? batch.size() : 1);
  const LossStats stats = softmax_cross_entropy(logits, labels_, scale, &grad_logits_, arena_);
  model_->backward(grad_logits_);
  optimizer_->apply(model_->params(), model_->grads());
  return stats;
}

}  // namespace mirrorlab::core
