// cuda_runtime.h for a build without CUDA: the same functions, saying why there is no GPU, so
// callers need no #ifdefs. MIRRORLAB_CUDA_STATUS_TEXT is the configure step's own sentence.
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {
namespace {

std::string no_cuda() {
  return std::string("this build has no CUDA: ") + MIRRORLAB_CUDA_STATUS_TEXT;
}

}  // namespace

std::string no_cuda_error(std::string_view what) {
  return std::string(what) + ", but " + no_cuda() +
         ". Rebuild with the CUDA toolkit installed, or use CPU-backed virtual GPUs";
}

bool cuda_built() { return false; }

std::string cuda_build_description() { return no_cuda(); }

}  // namespace mirrorlab::vgpu
