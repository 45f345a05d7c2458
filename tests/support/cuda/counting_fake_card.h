// Logical GPUs of a fake card whose every call is counted as the process's runtime counts them
// (virtualgpu/cuda/gpu_work_counts.h): the fake CUDA runtime and the fake model kernels, each
// wrapped in the counting layer, and the devices made over them. For tests that pin what a
// training step asks of the GPU.
#pragma once

#include <vector>

#include "core/nn/cuda/counting_gpu_model_api.h"
#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_gpu_model_api.h"
#include "virtualgpu/cuda/counting_cuda_api.h"

namespace mirrorlab::testing {

struct CountingFakeCard {
  explicit CountingFakeCard(int gpus)
      : devices(api, std::vector<int>(static_cast<std::size_t>(gpus), 0)) {}

  FakeCudaApi fake;
  vgpu::GpuWorkCounts counts;
  vgpu::CountingCudaApi api{fake, counts};
  FakeGpuModelApi fake_model{fake};
  core::CountingGpuModelApi model{fake_model, counts};
  FakeCudaDevices devices;  // gpus logical GPUs of GPU 0
};

}  // namespace mirrorlab::testing
