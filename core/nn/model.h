// A Sequential model whose parameters and gradients each live in one flat buffer in its
// device's arena, so a replica's gradients are one all-reduce and its weights one fingerprint.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/choice_names.h"
#include "core/nn/layers.h"
#include "core/nn/model_spec.h"
#include "core/nn/ops.h"
#include "core/nn/tensor.h"

namespace mirrorlab::core {

enum class ModelKind { kCnn, kMlp };
std::span<const ChoiceName<ModelKind>> choice_names(ModelKind);  // core/io/choice_names.h
ModelKind parse_model_kind(std::string_view name);  // "cnn" | "mlp"; std::invalid_argument else
const char* to_string(ModelKind kind);
// The layers of `kind`, as a list (what Model::layers_of(kind) builds).
std::vector<LayerSpec> layer_specs_of(ModelKind kind);

// One line of model.summary().
struct LayerSummary {
  std::string name, type;
  Shape output_shape;  // per example
  std::size_t params = 0;
  int tensors = 0;         // its weight tensors (kernel, bias): what TensorFlow all-reduces
  std::size_t offset = 0;  // where its parameters start in the flat buffer
};

// One weight tensor of the model (a layer's kernel or bias) inside the flat parameter buffer:
// what a checkpoint names and stores one by one.
struct WeightTensor {
  std::string name;  // "<layer>/<param>": "conv2d/kernel", "dense_1/bias"
  Shape shape;
  std::size_t offset = 0;  // in the flat buffer
  std::size_t size = 0;    // elements
};

class Model {
 public:
  // input_shape per example, e.g. {28, 28, 1}. Allocates the flat buffers in `arena` (throws
  // vgpu::OutOfMemoryError when they do not fit); computes with `ops`, the kernels of the arena's
  // device.
  Model(std::vector<std::unique_ptr<Layer>> layers, Shape input_shape, vgpu::MemoryArena& arena,
        Ops& ops = cpu_ops());

  // Keras' example CNN: Conv2D(32,3,relu) -> MaxPool2D -> Flatten -> Dense(128,relu) -> Dense(10)
  // MLP 784-256-128-10: Flatten -> Dense(256,relu) -> Dense(128,relu) -> Dense(10).
  // Both output logits; softmax is part of the loss.
  static std::unique_ptr<Model> create(ModelKind kind, vgpu::MemoryArena& arena,
                                       Ops& ops = cpu_ops());
  // What create() builds, unbound (nothing allocated): the layers of `kind` and the per-example
  // input shape they take, (28, 28, 1).
  static std::vector<std::unique_ptr<Layer>> layers_of(ModelKind kind);
  static Shape input_shape_of(ModelKind kind);

  // Deterministic Keras-default initialisation (drawn on the host, copied to the device).
  void init(std::uint64_t seed);

  std::size_t num_params() const { return params_.size(); }
  int num_weight_tensors() const;  // every layer's kernel and bias: 6 for both models
  std::span<float> params() { return params_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }
  const std::vector<LayerSummary>& summary() const { return summary_; }
  // Every kernel and bias in the order they lie in the flat buffer, which they tile.
  const std::vector<WeightTensor>& weight_tensors() const { return weight_tensors_; }
  const Shape& input_shape() const { return input_shape_; }
  vgpu::MemoryArena& arena() { return *arena_; }
  Ops& ops() { return *ops_; }
  // The parameters copied to the host (waits for the device's work before the copy).
  std::vector<float> params_to_host();
  // Overwrites the parameters with `host` (num_params() values), e.g. from a checkpoint. Throws
  // std::invalid_argument, changing nothing, when the length differs.
  void params_from_host(std::span<const float> host);
  // core::fingerprint of the parameters' bits, wherever they live.
  std::uint64_t params_fingerprint();
  // The same in two halves, so that the read-back shares the step's last wait: queue it, wait
  // for the device (Ops::synchronize), then take the fingerprint of what came back.
  const float* queue_params_read_back();
  std::uint64_t fingerprint_of(const float* read_back) const;
  // The first gradient that is NaN or infinite: its layer's name and value; nullopt when every
  // gradient is finite. One scan of the gradients (waits for the device's work).
  struct NonFiniteGradient {
    std::string layer;
    std::string tensor;     // "dense_1/kernel"
    std::size_t index = 0;  // the element within that tensor (row-major)
    float value = 0;
  };
  std::optional<NonFiniteGradient> first_nonfinite_gradient();
  // The same over the gradients [begin, end) of the flat buffer only.
  std::optional<NonFiniteGradient> first_nonfinite_gradient(std::size_t begin, std::size_t end);
  // The same scan queued on the device: *at holds the first bad element's index (or
  // num_params()) after the device's next wait for its read-backs (Ops::wait_loss_stats), which
  // the loss's read-back shares. nonfinite_gradient_at(at) then names it.
  void queue_gradient_check(std::size_t* at);
  std::optional<NonFiniteGradient> nonfinite_gradient_at(std::size_t at);

  // x: [b, input_shape...] -> logits [b, 10]
  const Tensor& forward(const Tensor& x);
  // The logits of the last forward() (what it returned).
  const Tensor& logits() const;
  // Overwrites grads() from d(loss)/d(logits) of the last forward(). The first layer's input
  // gradient is never computed (nothing needs it). `written` (optional) is called after each
  // layer with the offset from which every gradient to the end of the flat buffer is final, as
  // the layers go backwards (what gradient packs wait for).
  void backward(const Tensor& grad_logits,
                const std::function<void(std::size_t from)>& written = {});

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  Shape input_shape_;
  vgpu::MemoryArena* arena_;
  Ops* ops_;
  Tensor params_, grads_;
  std::vector<float> host_params_;  // params_fingerprint's copy on a device the host cannot read
  std::vector<LayerSummary> summary_;
  std::vector<WeightTensor> weight_tensors_;
  const Tensor* input_ = nullptr;
  std::vector<Tensor> grad_buffers_;  // d(loss)/d(activation) between layers, reused
};

}  // namespace mirrorlab::core
