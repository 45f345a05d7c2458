// The NCCL functions of a build without NCCL: they say so.
#include <stdexcept>

#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::vgpu {

NcclRuntime nccl_runtime() { return NcclRuntime{}; }

std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& /*devices*/) {
  throw std::invalid_argument(
      "the nccl all-reduce is not in this build (NCCL was not found when it was configured: "
      "nccl.h and libnccl under the CUDA toolkit); use reduce-to-one, ring or one-shot");
}

}  // namespace mirrorlab::vgpu
