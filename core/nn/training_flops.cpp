#include "core/nn/training_flops.h"

namespace mirrorlab::core {

double update_flops_per_param(const OptimizerConfig& optimizer) {
  switch (optimizer.kind) {
    case OptimizerKind::kSgd:
      return optimizer.momentum == 0.0f ? 2 : 4;
    case OptimizerKind::kAdam:
      return 12;
    case OptimizerKind::kNadam:
      return 18;
  }
  return 0;
}

TrainingFlops training_flops(ModelKind model, const OptimizerConfig& optimizer) {
  const std::vector<LayerSpec> layers = layer_specs_of(model);
  return training_flops(layers, optimizer);
}

TrainingFlops training_flops(std::span<const LayerSpec> layers, const OptimizerConfig& optimizer) {
  TrainingFlops total;
  Shape shape = Model::input_shape_of(ModelKind::kCnn);  // 28x28x1, whatever the model
  bool first = true;
  for (const auto& layer : make_layers(layers)) {
    const LayerFlops f = layer->flops(shape);
    total.forward += f.forward;
    total.backward += f.param_gradients + (first ? 0 : f.input_gradient);
    for (const ParamSpec& spec : layer->param_specs(shape)) total.params += shape_size(spec.shape);
    shape = layer->output_shape(shape);
    first = false;
  }
  total.update = update_flops_per_param(optimizer) * static_cast<double>(total.params);
  return total;
}

}  // namespace mirrorlab::core
