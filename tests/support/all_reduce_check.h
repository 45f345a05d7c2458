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

// Rank r's `count` floats, starting `offsets[r]` floats into a block of its device (misaligned on
// purpose, as nccl-tests does), written with the values above.
struct ExactInputs {
  std::vector<vgpu::Allocation> blocks;
  std::vector<std::span<float>> buffers;
};

inline ExactInputs write_exact_inputs(const std::vector<vgpu::Device*>& devices, std::size_t count,
                                      const std::vector<std::size_t>& offsets) {
  ExactInputs inputs;
  std::vector<float> host(count);
  for (std::size_t r = 0; r < devices.size(); ++r) {
    inputs.blocks.push_back(
        devices[r]->memory().allocate((count + offsets[r] + 1) * sizeof(float), "t"));
    inputs.buffers.emplace_back(inputs.blocks.back().as<float>() + offsets[r], count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>((r + 1) * (1 + i % 7));
    vgpu::write_buffer(*devices[r], inputs.buffers[r], host);
  }
  return inputs;
}

// Every element of every rank of `inputs` after their all-reduce by `op`, bit for bit.
inline void expect_exact_sums(const std::vector<vgpu::Device*>& devices, const ExactInputs& inputs,
                              vgpu::ReduceOp op) {
  const int n = static_cast<int>(devices.size());
  for (int r = 0; r < n; ++r) {
    std::vector<float> host(inputs.buffers[r].size());
    vgpu::read_buffer(*devices[r], inputs.buffers[r], host);
    for (std::size_t i = 0; i < host.size(); ++i) {
      float expected = static_cast<float>(n * (n + 1) / 2 * (1 + i % 7));
      if (op == vgpu::ReduceOp::kMean) expected *= 1.0f / static_cast<float>(n);
      ASSERT_EQ(host[i], expected) << "rank " << r << " element " << i;
    }
  }
}

// Writes the inputs, all-reduces them with `algorithm` and checks every element of every rank.
inline void check_all_reduce_exact(const std::vector<vgpu::Device*>& devices,
                                   const vgpu::AllReduce& algorithm, std::size_t count,
                                   const std::vector<std::size_t>& offsets, vgpu::ReduceOp op,
                                   vgpu::StepObserver* observer = nullptr) {
  SCOPED_TRACE(algorithm.name() + " n=" + std::to_string(devices.size()) +
               " count=" + std::to_string(count) + " offset0=" + std::to_string(offsets[0]));
  const ExactInputs inputs = write_exact_inputs(devices, count, offsets);
  vgpu::all_reduce(devices, inputs.buffers, algorithm, op, observer);
  expect_exact_sums(devices, inputs, op);
}

}  // namespace mirrorlab::testing
