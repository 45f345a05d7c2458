// The exact all-reduce check the CUDA tests share (test_cuda_collectives on a GPU, test_cuda_paths
// against the fakes): rank r's value i is (r + 1) * (1 + i % 7), small integers whose sums are
// exact in any order, so every element of every rank is checked bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::testing {

// All-reduces `count` floats starting `offsets[r]` floats into a block of rank r's device
// (misaligned on purpose, as nccl-tests does) and checks every element of every rank.
inline void check_all_reduce_exact(const std::vector<vgpu::Device*>& devices,
                                   const vgpu::AllReduce& algorithm, std::size_t count,
                                   const std::vector<std::size_t>& offsets, vgpu::ReduceOp op,
                                   vgpu::StepObserver* observer = nullptr) {
  const int n = static_cast<int>(devices.size());
  SCOPED_TRACE(algorithm.name() + " n=" + std::to_string(n) + " count=" + std::to_string(count) +
               " offset0=" + std::to_string(offsets[0]));
  std::vector<vgpu::Allocation> blocks;
  std::vector<std::span<float>> buffers;
  std::vector<float> host(count);
  for (int r = 0; r < n; ++r) {
    blocks.push_back(devices[r]->memory().allocate((count + offsets[r] + 1) * sizeof(float), "t"));
    buffers.emplace_back(blocks.back().as<float>() + offsets[r], count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>((r + 1) * (1 + i % 7));
    vgpu::write_buffer(*devices[r], buffers[r], host);
  }
  vgpu::all_reduce(devices, buffers, algorithm, op, observer);
  for (int r = 0; r < n; ++r) {
    vgpu::read_buffer(*devices[r], buffers[r], host);
    for (std::size_t i = 0; i < count; ++i) {
      float expected = static_cast<float>(n * (n + 1) / 2 * (1 + i % 7));
      if (op == vgpu::ReduceOp::kMean) expected *= 1.0f / static_cast<float>(n);
      ASSERT_EQ(host[i], expected) << "rank " << r << " element " << i;
    }
  }
}

}  // namespace mirrorlab::testing
