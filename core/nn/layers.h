// Layers of a Keras-style Sequential model: Dense, Conv2D (3x3, valid), MaxPool2D (2x2),
// Flatten, ReLU. The loss (softmax + sparse categorical cross-entropy) is in loss.h.
//
// A layer's parameters and gradients are views into its model's two flat buffers, so one
// all-reduce moves every gradient of a replica at once. Shapes here are per example (no batch
// dimension); tensors passed at run time have the batch first. A batch of 0 examples is valid
// everywhere (a replica may get an empty shard of the last batch).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/nn/ops.h"
#include "core/nn/tensor.h"

namespace mirrorlab::core {

struct ParamSpec {
  std::string name;  // "kernel", "bias"
  Shape shape;
};

// The arithmetic one example costs a layer, as the kernels do it: a multiply-add counts 2, an add,
// a multiply or a comparison 1; copies and moves count nothing. For the timing model's compute
// scaled to a machine's FLOP/s (core/nn/training_flops.h).
struct LayerFlops {
  double forward = 0;
  double param_gradients = 0;  // backward: d(loss)/d(kernel, bias)
  double input_gradient = 0;   // backward: d(loss)/d(input), when the model asks for it
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;

  const std::string& name() const { return name_; }  // "conv2d", "dense_1"
  virtual std::string type() const = 0;              // "Conv2D", "Dense"
  // Per-example output shape for a per-example input shape; throws std::invalid_argument when
  // the input does not fit (a sentence naming the layer and both shapes).
  virtual Shape output_shape(const Shape& input) const = 0;
  virtual std::vector<ParamSpec> param_specs(const Shape& input) const {
    (void)input;
    return {};
  }
  // Per example, for a per-example input shape (checked as output_shape() checks it).
  virtual LayerFlops flops(const Shape& input) const {
    output_shape(input);
    return {};
  }

  // Called once by the model: the layer's per-example input shape, its slices of the model's
  // flat parameter and gradient buffers (laid out in param_specs order), the arena that its
  // activations and scratch come from and the kernels of that arena's device (the spans point
  // into device memory, which the host may not touch unless ops.host_accessible()).
  virtual void bind(const Shape& input, std::span<float> params, std::span<float> grads,
                    vgpu::MemoryArena& arena, Ops& ops = cpu_ops());
  // Keras defaults: glorot_uniform kernels, zero biases, written into `params` (host memory laid
  // out like this layer's slice of the parameters; the model copies it to the device).
  virtual void init_params(std::mt19937_64& rng, std::span<float> params) {
    (void)rng;
    (void)params;
  }

  // Computes and keeps the output; `input` must stay alive until backward().
  virtual const Tensor& forward(const Tensor& input) = 0;
  // The output of the last forward() (the next layer's input, which backward() needs).
  const Tensor& output() const { return output_; }
  // Overwrites this layer's parameter gradients with d(loss)/d(params) and, when grad_input is
  // not null, writes d(loss)/d(input) into it (shaped like the input).
  virtual void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) = 0;

 protected:
  vgpu::MemoryArena* arena_ = nullptr;
  Ops* ops_ = &cpu_ops();
  Shape input_shape_;
  std::span<float> params_, grads_;
  Tensor output_;

 private:
  std::string name_;
};

std::unique_ptr<Layer> make_dense(std::string name, int units);
std::unique_ptr<Layer> make_conv2d_3x3(std::string name, int filters);  // stride 1, valid
std::unique_ptr<Layer> make_max_pool_2x2(std::string name);             // floors odd sizes
std::unique_ptr<Layer> make_flatten(std::string name);
std::unique_ptr<Layer> make_relu(std::string name);

}  // namespace mirrorlab::core
