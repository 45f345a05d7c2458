// A float32 tensor living in a device's memory arena (row-major, NHWC for images).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {

using Shape = std::vector<int>;

std::size_t shape_size(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "(64, 26, 26, 32)"

class Tensor {
 public:
  Tensor() = default;
  Tensor(vgpu::MemoryArena& arena, Shape shape, std::string_view what);

  // Gives the tensor `shape`, taking a new block from `arena` only when the current one is too
  // small (so a smaller last batch reuses the block). Contents are unspecified afterwards.
  void ensure(vgpu::MemoryArena& arena, const Shape& shape, std::string_view what);
  // Same, inside the current block only (no arena at hand): throws std::logic_error naming
  // `what` when the block is too small.
  void ensure(const Shape& shape, std::string_view what);
  // Same number of elements, another shape (Flatten).
  void reshape(const Shape& shape);

  const Shape& shape() const { return shape_; }
  int dim(int i) const { return shape_[static_cast<std::size_t>(i)]; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return alloc_.bytes() / sizeof(float); }  // of the block
  float* data() { return alloc_.as<float>(); }
  const float* data() const { return alloc_.as<float>(); }
  std::span<float> span() { return {data(), size_}; }
  std::span<const float> span() const { return {data(), size_}; }

 private:
  vgpu::Allocation alloc_;
  Shape shape_;
  std::size_t size_ = 0;
};

}  // namespace mirrorlab::core
