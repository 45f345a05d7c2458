#include "core/nn/tensor.h"

#include <stdexcept>

namespace mirrorlab::core {

std::size_t shape_size(const Shape& shape) {
  std::size_t n = 1;
  for (int d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_to_string(shape));
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  // Python's tuple spelling, as Keras prints it: "(64, 26, 26, 32)", "(10,)", "()".
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

Tensor::Tensor(vgpu::MemoryArena& arena, Shape shape, std::string_view what) {
  ensure(arena, shape, what);
}

void Tensor::ensure(vgpu::MemoryArena& arena, const Shape& shape, std::string_view what) {
  const std::size_t n = shape_size(shape);
  if (n > capacity()) {
    // Give the old block back first: a growing tensor never holds both (lower peak), and on
    // failure the tensor is left empty rather than half-shaped.
    alloc_.reset();
    shape_.clear();
    size_ = 0;
    alloc_ = arena.allocate(n * sizeof(float), what);
  }
  shape_ = shape;
  size_ = n;
}

void Tensor::ensure(const Shape& shape, std::string_view what) {
  const std::size_t n = shape_size(shape);
  if (n > capacity()) {
    throw std::logic_error(std::string(what) + ": needs " + std::to_string(n) +
                           " floats for shape " + shape_to_string(shape) + " but its block holds " +
                           std::to_string(capacity()) + " and no arena was given to grow it");
  }
  shape_ = shape;
  size_ = n;
}

void Tensor::reshape(const Shape& shape) {
  if (shape_size(shape) != size_) {
    throw std::invalid_argument("cannot reshape a tensor of shape " + shape_to_string(shape_) +
                                " to " + shape_to_string(shape) + ": the sizes differ");
  }
  shape_ = shape;
}

}  // namespace mirrorlab::core
