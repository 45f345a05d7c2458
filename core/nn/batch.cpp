#include "core/nn/batch.h"

#include <stdexcept>

namespace mirrorlab::core {

void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices,
                  vgpu::MemoryArena& arena, Tensor& images, std::vector<std::uint8_t>& labels,
                  Ops& ops, std::vector<float>* host_staging) {
  images.ensure(arena, Shape{static_cast<int>(indices.size()), data.rows, data.cols, 1},
                "input images");
  labels.resize(indices.size());
  const bool direct = ops.host_accessible();
  if (!direct && host_staging == nullptr) {
    throw std::logic_error(
        "gather_batch: a device the host cannot write needs a host staging buffer");
  }
  if (!direct) host_staging->resize(images.size());
  const std::size_t pixels = data.image_bytes();
  float* out = direct ? images.data() : host_staging->data();
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::uint8_t* in = data.image(indices[i]);
    for (std::size_t p = 0; p < pixels; ++p) out[i * pixels + p] = in[p] * (1.0f / 255.0f);
    labels[i] = data.labels[indices[i]];
  }
  if (!direct) ops.copy_to_device(images.data(), out, images.size() * sizeof(float));
}

}  // namespace mirrorlab::core
