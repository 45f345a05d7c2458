// CudaOps in a build without CUDA: says so, in a sentence, instead of failing to link.
#include <stdexcept>

#include "core/ops_cuda.h"

namespace mirrorlab::core {

std::unique_ptr<Ops> make_cuda_ops(int, void*, vgpu::MemoryArena&) {
  throw std::runtime_error(
      "CUDA kernels are not in this build: rebuild with the CUDA toolkit installed "
      "(-DMIRRORLAB_WITH_CUDA=ON) or train on CPU-backed virtual GPUs");
}

}  // namespace mirrorlab::core
