// Layer plumbing (bind, shape checks, Glorot initialisation) and the flat layers: Dense, Flatten,
// ReLU. Conv2D and MaxPool2D live in layers_conv.cpp.
#include "core/nn/layers.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace mirrorlab::core {
namespace layer_detail {

// Shared with layers_conv.cpp (declared there): the batch size of a run-time tensor that must be
// [batch, per_example...]; throws std::invalid_argument otherwise.
int batch_of(const Layer& layer, const Shape& per_example, const Tensor& t) {
  const Shape& s = t.shape();
  if (s.size() != per_example.size() + 1 ||
      !std::equal(per_example.begin(), per_example.end(), s.begin() + 1)) {
    Shape expected = per_example;
    expected.insert(expected.begin(), -1);
    std::string want = shape_to_string(expected);
    want.replace(1, 2, "batch");  // "(batch, 28, 28, 1)"
    throw std::invalid_argument("layer " + layer.name() + " (" + layer.type() +
                                ") got a tensor of shape " + shape_to_string(s) + ", expected " +
                                want);
  }
  return s[0];
}

std::string bad_input(const Layer& layer, const Shape& input, const std::string& wants) {
  return "layer " + layer.name() + " (" + layer.type() + ") cannot take input of shape " +
         shape_to_string(input) + ": " + wants;
}

// Keras' glorot_uniform: U[-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)). The float
// is built from 25 bits of the 64-bit draw by integer arithmetic and exact scalings, so the same
// seed gives the same bits on every machine and compiler (std::uniform_real_distribution does
// not promise that).
void glorot_uniform(std::mt19937_64& rng, std::span<float> out, int fan_in, int fan_out) {
  const float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
  for (float& v : out) {
    const auto k = static_cast<std::int32_t>(rng() >> 39) - (std::int32_t{1} << 24);
    v = static_cast<float>(k) * 0x1p-24f * limit;  // k * 2^-24 is exact, in [-1, 1)
  }
}

}  // namespace layer_detail

using namespace layer_detail;

void Layer::bind(const Shape& input, std::span<float> params, std::span<float> grads,
                 vgpu::MemoryArena& arena, Ops& ops) {
  std::size_t expected = 0;
  for (const ParamSpec& spec : param_specs(input)) expected += shape_size(spec.shape);
  assert(params.size() == expected && grads.size() == expected);
  (void)expected;
  input_shape_ = input;
  params_ = params;
  grads_ = grads;
  arena_ = &arena;
  ops_ = &ops;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Dense: y[b, units] = x[b, in] . W[in, units] + bias[units]
// ---------------------------------------------------------------------------------------------
class Dense final : public Layer {
 public:
  Dense(std::string name, int units) : Layer(std::move(name)), units_(units) {
    if (units <= 0) throw std::invalid_argument("Dense needs at least one unit");
  }
  std::string type() const override { return "Dense"; }

  Shape output_shape(const Shape& input) const override {
    if (input.size() != 1 || input[0] <= 0) {
      throw std::invalid_argument(bad_input(
          *this, input, "Dense takes one flat vector per example (put a Flatten before it)"));
    }
    return {units_};
  }
  std::vector<ParamSpec> param_specs(const Shape& input) const override {
    output_shape(input);
    return {{"kernel", {input[0], units_}}, {"bias", {units_}}};
  }
  // x . W accumulated onto the copied bias: in x units multiply-adds. dW = x^T . dY the same,
  // db a column sum (units adds), dX = dY . W^T the same multiply-adds again.
  LayerFlops flops(const Shape& input) const override {
    output_shape(input);
    const double multiply_adds = static_cast<double>(input[0]) * units_;
    return {2 * multiply_adds, 2 * multiply_adds + units_, 2 * multiply_adds};
  }
  void bind(const Shape& input, std::span<float> params, std::span<float> grads,
            vgpu::MemoryArena& arena, Ops& ops = cpu_ops()) override {
    output_shape(input);
    Layer::bind(input, params, grads, arena, ops);
    in_ = input[0];
  }
  void init_params(std::mt19937_64& rng, std::span<float> params) override {
    const std::size_t kernel = static_cast<std::size_t>(in_) * units_;
    glorot_uniform(rng, params.subspan(0, kernel), in_, units_);
    std::fill(params.begin() + kernel, params.end(), 0.0f);
  }

  const Tensor& forward(const Tensor& input) override {
    const int batch = batch_of(*this, input_shape_, input);
    output_.ensure(*arena_, {batch, units_}, name() + "/output");
    const float* w = params_.data();
    const float* bias = w + static_cast<std::size_t>(in_) * units_;
    ops_->broadcast_rows(bias, batch, units_, output_.data());
    ops_->gemm(false, false, batch, units_, in_, 1.0f, input.data(), in_, w, units_, 1.0f,
               output_.data(), units_);
    return output_;
  }

  void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) override {
    const int batch = batch_of(*this, input_shape_, input);
    assert(grad_output.size() == static_cast<std::size_t>(batch) * units_);
    const float* dy = grad_output.data();
    float* dw = grads_.data();
    float* db = dw + static_cast<std::size_t>(in_) * units_;
    // dW[in, units] = x^T . dY ; db = column sums of dY ; dX[b, in] = dY . W^T
    ops_->gemm(true, false, in_, units_, batch, 1.0f, input.data(), in_, dy, units_, 0.0f, dw,
               units_);
    ops_->column_sums(dy, batch, units_, db);
    if (grad_input != nullptr) {
      grad_input->ensure(*arena_, input.shape(), name() + "/input gradient");
      ops_->gemm(false, true, batch, in_, units_, 1.0f, dy, units_, params_.data(), units_, 0.0f,
                 grad_input->data(), in_);
    }
  }

 private:
  int units_;
  int in_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Flatten: [b, d1, d2, ...] -> [b, d1*d2*...] (a copy: a Tensor owns its block)
// ---------------------------------------------------------------------------------------------
class Flatten final : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "Flatten"; }
  Shape output_shape(const Shape& input) const override {
    if (input.empty()) {
      throw std::invalid_argument(bad_input(*this, input, "Flatten needs at least one dimension"));
    }
    return {static_cast<int>(shape_size(input))};
  }
  const Tensor& forward(const Tensor& input) override {
    const int batch = batch_of(*this, input_shape_, input);
    const int n = static_cast<int>(shape_size(input_shape_));
    output_.ensure(*arena_, {batch, n}, name() + "/output");
    ops_->copy(output_.data(), input.data(), input.size());
    return output_;
  }
  void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) override {
    assert(grad_output.size() == input.size());
    if (grad_input == nullptr) return;
    grad_input->ensure(*arena_, input.shape(), name() + "/input gradient");
    ops_->copy(grad_input->data(), grad_output.data(), input.size());
  }
};

// ---------------------------------------------------------------------------------------------
// ReLU: y = max(x, 0); dx = dy where x > 0
// ---------------------------------------------------------------------------------------------
class ReLU final : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "ReLU"; }
  Shape output_shape(const Shape& input) const override { return input; }
  // One comparison per value each way (max(x, 0); dy where x > 0).
  LayerFlops flops(const Shape& input) const override {
    const double values = static_cast<double>(shape_size(input));
    return {values, 0, values};
  }
  const Tensor& forward(const Tensor& input) override {
    batch_of(*this, input_shape_, input);
    output_.ensure(*arena_, input.shape(), name() + "/output");
    ops_->relu_forward(input.data(), input.size(), output_.data());
    return output_;
  }
  void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) override {
    assert(grad_output.size() == input.size());
    if (grad_input == nullptr) return;
    grad_input->ensure(*arena_, input.shape(), name() + "/input gradient");
    ops_->relu_backward(input.data(), grad_output.data(), input.size(), grad_input->data());
  }
};

}  // namespace

std::unique_ptr<Layer> make_dense(std::string name, int units) {
  return std::make_unique<Dense>(std::move(name), units);
}
std::unique_ptr<Layer> make_flatten(std::string name) {
  return std::make_unique<Flatten>(std::move(name));
}
std::unique_ptr<Layer> make_relu(std::string name) {
  return std::make_unique<ReLU>(std::move(name));
}

}  // namespace mirrorlab::core
