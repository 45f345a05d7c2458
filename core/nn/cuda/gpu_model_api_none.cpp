// GpuModelApi in a build without CUDA: says so, in a sentence, instead of failing to link.
#include <stdexcept>

#include "core/nn/cuda/gpu_model_api.h"
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::core {

GpuModelApi& runtime_gpu_model_api() {
  throw std::runtime_error(vgpu::no_cuda_error("CUDA kernels were asked for"));
}

}  // namespace mirrorlab::core
