#include "core/batch.h"

namespace mirrorlab::core {

void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices,
                  vgpu::MemoryArena& arena, Tensor& images, std::vector<std::uint8_t>& labels) {
  images.ensure(arena, Shape{static_cast<int>(indices.size()), data.rows, data.cols, 1},
                "input images");
  labels.resize(indices.size());
  const std::size_t pixels = data.image_bytes();
  float* out = images.data();
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::uint8_t* in = data.image(indices[i]);
    for (std::size_t p = 0; p < pixels; ++p) out[i * pixels + p] = in[p] * (1.0f / 255.0f);
    labels[i] = data.labels[indices[i]];
  }
}

}  // namespace mirrorlab::core
