#include "core/nn/model.h"

#include <cassert>
#include <random>
#include <stdexcept>
#include <string>

#include "core/nn/fingerprint.h"

namespace mirrorlab::core {

std::span<const ChoiceName<ModelKind>> choice_names(ModelKind) {
  static constexpr ChoiceName<ModelKind> kNames[] = {
      {ModelKind::kCnn, "cnn", "Keras' example CNN (Conv2D + MaxPool + Dense)"},
      {ModelKind::kMlp, "mlp", "a multi-layer perceptron, 784-256-128-10"},
  };
  return kNames;
}

ModelKind parse_model_kind(std::string_view name) { return parse_choice<ModelKind>(name, "model"); }

const char* to_string(ModelKind kind) { return choice_name(kind); }

Model::Model(std::vector<std::unique_ptr<Layer>> layers, Shape input_shape,
             vgpu::MemoryArena& arena, Ops& ops)
    : layers_(std::move(layers)), input_shape_(std::move(input_shape)), arena_(&arena), ops_(&ops) {
  if (layers_.empty()) throw std::invalid_argument("a model needs at least one layer");
  // Walk the shapes once: each layer's output shape, parameter count and offset in the flat
  // buffers (output_shape() throws a sentence naming the layer when shapes do not fit).
  std::vector<Shape> inputs;
  Shape shape = input_shape_;
  std::size_t offset = 0;
  for (const auto& layer : layers_) {
    std::size_t count = 0;
    const std::vector<ParamSpec> specs = layer->param_specs(shape);
    for (const ParamSpec& spec : specs) {
      weight_tensors_.push_back(
          {layer->name() + "/" + spec.name, spec.shape, offset + count, shape_size(spec.shape)});
      count += shape_size(spec.shape);
    }
    inputs.push_back(shape);
    shape = layer->output_shape(shape);
    summary_.push_back(
        {layer->name(), layer->type(), shape, count, static_cast<int>(specs.size()), offset});
    offset += count;
  }
  params_.ensure(arena, {static_cast<int>(offset)}, "model parameters");
  grads_.ensure(arena, {static_cast<int>(offset)}, "model gradients");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const LayerSummary& s = summary_[i];
    layers_[i]->bind(inputs[i], params_.span().subspan(s.offset, s.params),
                     grads_.span().subspan(s.offset, s.params), arena, ops);
  }
  grad_buffers_.resize(layers_.size() - 1);
}

std::unique_ptr<Model> Model::create(ModelKind kind, vgpu::MemoryArena& arena, Ops& ops) {
  return std::make_unique<Model>(layers_of(kind), input_shape_of(kind), arena, ops);
}

Shape Model::input_shape_of(ModelKind) { return {28, 28, 1}; }

std::vector<LayerSpec> layer_specs_of(ModelKind kind) {
  // Names as Keras gives them; the activations are separate ReLU layers (what the code runs),
  // so summary() lists them too, with 0 parameters.
  using K = LayerSpec::Kind;
  switch (kind) {
    case ModelKind::kCnn:
      return {{K::kConv2D, 32, "conv2d"},
              {K::kReLU, 0, "re_lu"},
              {K::kMaxPooling2D, 0, "max_pooling2d"},
              {K::kFlatten, 0, "flatten"},
              {K::kDense, 128, "dense"},
              {K::kReLU, 0, "re_lu_1"},
              {K::kDense, 10, "dense_1"}};
    case ModelKind::kMlp:
      return {{K::kFlatten, 0, "flatten"}, {K::kDense, 256, "dense"}, {K::kReLU, 0, "re_lu"},
              {K::kDense, 128, "dense_1"}, {K::kReLU, 0, "re_lu_1"},  {K::kDense, 10, "dense_2"}};
  }
  return {};
}

std::vector<std::unique_ptr<Layer>> Model::layers_of(ModelKind kind) {
  return make_layers(layer_specs_of(kind));
}

int Model::num_weight_tensors() const {
  int tensors = 0;
  for (const LayerSummary& layer : summary_) tensors += layer.tensors;
  return tensors;
}

void Model::init(std::uint64_t seed) {
  // Drawn on the host in layer order whatever the device, so a seed gives the same bits on CPU
  // and CUDA replicas; one copy to the device.
  std::mt19937_64 rng(seed);
  std::vector<float> host(num_params());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->init_params(rng, std::span(host).subspan(summary_[i].offset, summary_[i].params));
  }
  ops_->copy_to_device(params_.data(), host.data(), host.size() * sizeof(float));
}

std::vector<float> Model::params_to_host() {
  std::vector<float> host(num_params());
  ops_->copy_to_host(host.data(), params_.data(), host.size() * sizeof(float));
  return host;
}

void Model::params_from_host(std::span<const float> host) {
  if (host.size() != num_params()) {
    throw std::invalid_argument("the model has " + std::to_string(num_params()) +
                                " parameters, not " + std::to_string(host.size()));
  }
  ops_->copy_to_device(params_.data(), host.data(), host.size_bytes());
}

std::uint64_t Model::params_fingerprint() {
  if (ops_->host_accessible()) return fingerprint(params_.span());
  host_params_.resize(num_params());
  ops_->copy_to_host(host_params_.data(), params_.data(), host_params_.size() * sizeof(float));
  return fingerprint(host_params_);
}

const float* Model::queue_params_read_back() {
  return static_cast<const float*>(
      ops_->read_back_async(params_.data(), num_params() * sizeof(float)));
}

std::uint64_t Model::fingerprint_of(const float* read_back) const {
  return fingerprint(std::span<const float>(read_back, num_params()));
}

std::optional<Model::NonFiniteGradient> Model::first_nonfinite_gradient() {
  return first_nonfinite_gradient(0, num_params());
}

std::optional<Model::NonFiniteGradient> Model::first_nonfinite_gradient(std::size_t begin,
                                                                        std::size_t end) {
  const std::size_t at = ops_->first_nonfinite(grads_.data() + begin, end - begin);
  return nonfinite_gradient_at(at == end - begin ? num_params() : begin + at);
}

void Model::queue_gradient_check(std::size_t* at) {
  ops_->find_nonfinite(grads_.data(), num_params(), at);
}

std::optional<Model::NonFiniteGradient> Model::nonfinite_gradient_at(std::size_t at) {
  if (at >= num_params()) return std::nullopt;
  NonFiniteGradient found;
  ops_->copy_to_host(&found.value, grads_.data() + at, sizeof(float));
  for (const LayerSummary& layer : summary_) {
    if (at >= layer.offset && at < layer.offset + layer.params) found.layer = layer.name;
  }
  for (const WeightTensor& t : weight_tensors_) {
    if (at >= t.offset && at < t.offset + t.size) {
      found.tensor = t.name;
      found.index = at - t.offset;
    }
  }
  return found;
}

const Tensor& Model::forward(const Tensor& x) {
  input_ = &x;
  const Tensor* activation = &x;
  for (const auto& layer : layers_) activation = &layer->forward(*activation);
  return *activation;
}

const Tensor& Model::logits() const { return layers_.back()->output(); }

void Model::backward(const Tensor& grad_logits,
                     const std::function<void(std::size_t from)>& written) {
  assert(input_ != nullptr && "Model::backward before forward");
  if (grad_logits.shape() != layers_.back()->output().shape()) {
    throw std::invalid_argument("Model::backward got a logits gradient of shape " +
                                shape_to_string(grad_logits.shape()) + " for logits of shape " +
                                shape_to_string(layers_.back()->output().shape()));
  }
  const Tensor* grad = &grad_logits;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const Tensor& input = i == 0 ? *input_ : layers_[i - 1]->output();
    Tensor* grad_input = i == 0 ? nullptr : &grad_buffers_[i - 1];
    layers_[i]->backward(input, *grad, grad_input);
    grad = grad_input;
    if (written) written(summary_[i].offset);
  }
}

}  // namespace mirrorlab::core
