// Image layers: Conv2D (3x3, stride 1, valid) as im2col + GEMM, and MaxPool2D (2x2, stride 2).
#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "core/nn/layers.h"

namespace mirrorlab::core {
namespace layer_detail {  // defined in layers.cpp
int batch_of(const Layer& layer, const Shape& per_example, const Tensor& t);
std::string bad_input(const Layer& layer, const Shape& input, const std::string& wants);
void glorot_uniform(std::mt19937_64& rng, std::span<float> out, int fan_in, int fan_out);
}  // namespace layer_detail

using namespace layer_detail;

namespace {

// ---------------------------------------------------------------------------------------------
// Conv2D: kernel [3, 3, in_c, filters] (Keras HWIO), which read flat is [9*in_c, filters] with
// row (ky*3 + kx)*in_c + ci: exactly the column order of im2col_3x3. So
//   Y[b*oh*ow, filters] = cols[b*oh*ow, 9*in_c] . K[9*in_c, filters] + bias
//   dK = cols^T . dY,  db = column sums of dY,  dX = col2im(dY . K^T)
// The columns of the forward pass are kept for dK (the price: 9x the input in memory).
// ---------------------------------------------------------------------------------------------
// A layer on (height, width, channels) images: binding checks the shape and keeps its sides.
class ImageLayer : public Layer {
 public:
  using Layer::Layer;
  void bind(const Shape& input, std::span<float> params, std::span<float> grads,
            vgpu::MemoryArena& arena, Ops& ops = cpu_ops()) override {
    output_shape(input);
    Layer::bind(input, params, grads, arena, ops);
    h_ = input[0];
    w_ = input[1];
    c_ = input[2];
  }

 protected:
  int h_ = 0, w_ = 0, c_ = 0;
};

class Conv2D final : public ImageLayer {
 public:
  Conv2D(std::string name, int filters) : ImageLayer(std::move(name)), filters_(filters) {
    if (filters <= 0) throw std::invalid_argument("Conv2D needs at least one filter");
  }
  std::string type() const override { return "Conv2D"; }

  Shape output_shape(const Shape& input) const override {
    if (input.size() != 3 || input[0] < 3 || input[1] < 3 || input[2] <= 0) {
      throw std::invalid_argument(bad_input(
          *this, input,
          "a 3x3 Conv2D takes (height, width, channels) images at least 3 pixels on each side"));
    }
    return {input[0] - 2, input[1] - 2, filters_};
  }
  std::vector<ParamSpec> param_specs(const Shape& input) const override {
    output_shape(input);
    return {{"kernel", {3, 3, input[2], filters_}}, {"bias", {filters_}}};
  }
  // At each output position, the 9 x channels patch times the kernel: 9c x filters multiply-adds
  // accumulated onto the copied bias; dK the same, db a column sum (one add per output value);
  // dX the same multiply-adds, then col2im adds each of the 9c column values into its pixel.
  LayerFlops flops(const Shape& input) const override {
    const Shape out = output_shape(input);
    const double positions = static_cast<double>(out[0]) * out[1];
    const double patch = 9.0 * input[2];
    const double multiply_adds = positions * patch * filters_;
    return {2 * multiply_adds, 2 * multiply_adds + positions * filters_,
            2 * multiply_adds + positions * patch};
  }
  void init_params(std::mt19937_64& rng, std::span<float> params) override {
    const std::size_t kernel = patch() * static_cast<std::size_t>(filters_);
    glorot_uniform(rng, params.subspan(0, kernel), 9 * c_, 9 * filters_);
    std::fill(params.begin() + kernel, params.end(), 0.0f);
  }

  const Tensor& forward(const Tensor& input) override {
    const int batch = batch_of(*this, input_shape_, input);
    const int oh = h_ - 2, ow = w_ - 2, rows = batch * oh * ow, k = static_cast<int>(patch());
    cols_.ensure(*arena_, {rows, k}, name() + "/im2col columns");
    output_.ensure(*arena_, {batch, oh, ow, filters_}, name() + "/output");
    ops_->im2col_3x3(input.data(), batch, h_, w_, c_, cols_.data());
    const float* kernel = params_.data();
    ops_->broadcast_rows(kernel + patch() * filters_, rows, filters_, output_.data());
    ops_->gemm(false, false, rows, filters_, k, 1.0f, cols_.data(), k, kernel, filters_, 1.0f,
               output_.data(), filters_);
    return output_;
  }

  void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) override {
    const int batch = batch_of(*this, input_shape_, input);
    const int rows = batch * (h_ - 2) * (w_ - 2), k = static_cast<int>(patch());
    assert(grad_output.size() == static_cast<std::size_t>(rows) * filters_);
    assert(cols_.size() == static_cast<std::size_t>(rows) * k && "backward without forward");
    const float* dy = grad_output.data();
    float* dk = grads_.data();
    ops_->gemm(true, false, k, filters_, rows, 1.0f, cols_.data(), k, dy, filters_, 0.0f, dk,
               filters_);
    ops_->column_sums(dy, rows, filters_, dk + patch() * filters_);
    if (grad_input != nullptr) {
      dcols_.ensure(*arena_, {rows, k}, name() + "/im2col column gradient");
      ops_->gemm(false, true, rows, k, filters_, 1.0f, dy, filters_, params_.data(), filters_, 0.0f,
                 dcols_.data(), k);
      grad_input->ensure(*arena_, input.shape(), name() + "/input gradient");
      ops_->col2im_3x3(dcols_.data(), batch, h_, w_, c_, grad_input->data());
    }
  }

 private:
  std::size_t patch() const { return 9 * static_cast<std::size_t>(c_); }
  int filters_;
  Tensor cols_, dcols_;
};

// ---------------------------------------------------------------------------------------------
// MaxPool2D, 2x2 windows, stride 2, odd sizes floored (the last row/column is dropped, as Keras'
// "valid" padding). The forward pass records which of the 4 window positions won (0..3, first
// maximum on ties, stored as exact small floats) so backward routes each gradient to it.
// ---------------------------------------------------------------------------------------------
class MaxPool2D final : public ImageLayer {
 public:
  using ImageLayer::ImageLayer;
  std::string type() const override { return "MaxPooling2D"; }

  Shape output_shape(const Shape& input) const override {
    if (input.size() != 3 || input[0] < 2 || input[1] < 2 || input[2] <= 0) {
      throw std::invalid_argument(bad_input(
          *this, input,
          "a 2x2 MaxPool2D takes (height, width, channels) images at least 2 pixels on each side"));
    }
    return {input[0] / 2, input[1] / 2, input[2]};
  }
  // 3 comparisons find the largest of each window's 4; backward only routes each gradient.
  LayerFlops flops(const Shape& input) const override {
    return {3.0 * static_cast<double>(shape_size(output_shape(input))), 0, 0};
  }

  const Tensor& forward(const Tensor& input) override {
    const int batch = batch_of(*this, input_shape_, input);
    const int oh = h_ / 2, ow = w_ / 2;
    output_.ensure(*arena_, {batch, oh, ow, c_}, name() + "/output");
    argmax_.ensure(*arena_, {batch, oh, ow, c_}, name() + "/argmax");
    ops_->max_pool_2x2_forward(input.data(), batch, h_, w_, c_, output_.data(), argmax_.data());
    return output_;
  }

  void backward(const Tensor& input, const Tensor& grad_output, Tensor* grad_input) override {
    const int batch = batch_of(*this, input_shape_, input);
    assert(grad_output.size() == argmax_.size() && "backward without forward");
    if (grad_input == nullptr) return;
    grad_input->ensure(*arena_, input.shape(), name() + "/input gradient");
    ops_->max_pool_2x2_backward(grad_output.data(), argmax_.data(), batch, h_, w_, c_,
                                grad_input->data());
  }

 private:
  Tensor argmax_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d_3x3(std::string name, int filters) {
  return std::make_unique<Conv2D>(std::move(name), filters);
}
std::unique_ptr<Layer> make_max_pool_2x2(std::string name) {
  return std::make_unique<MaxPool2D>(std::move(name));
}

}  // namespace mirrorlab::core
