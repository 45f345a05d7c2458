// CudaOps in a build without CUDA: says so, in a sentence, instead of failing to link.
#include <stdexcept>

#include "core/nn/ops_cuda.h"
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::core {

std::unique_ptr<Ops> make_cuda_ops(int, void*, vgpu::MemoryArena&) {
  throw std::runtime_error(vgpu::no_cuda_error("CUDA kernels were asked for"));
}

}  // namespace mirrorlab::core
