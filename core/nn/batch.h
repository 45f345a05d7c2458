// Gathering examples of a dataset into a float tensor on a device: the "split" of a step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/io/dataset.h"
#include "core/nn/ops.h"
#include "core/nn/tensor.h"

namespace mirrorlab::core {

// images := examples `indices` of `data` as [n, rows, cols, 1] floats in [0, 1], taken from
// `arena`; labels := their labels (host). The pixels are converted on the host; on a device whose
// memory the host cannot write (!ops.host_accessible()) they are converted into `host_staging`
// (required there, reused across calls) and copied to the device with `ops`.
void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices,
                  vgpu::MemoryArena& arena, Tensor& images, std::vector<std::uint8_t>& labels,
                  Ops& ops = cpu_ops(), std::vector<float>* host_staging = nullptr);

}  // namespace mirrorlab::core
