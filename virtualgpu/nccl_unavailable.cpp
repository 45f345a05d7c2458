// The NCCL functions of a build without NCCL: they say so.
#include <stdexcept>

#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::vgpu {

NcclRuntime nccl_runtime() { return NcclRuntime{}; }

// Never reached through the table: its nccl row says first that this build has no NCCL.
std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& /*devices*/,
                                                bool /*multi_rank*/) {
  throw std::logic_error("make_nccl_all_reduce in a build without NCCL");
}

}  // namespace mirrorlab::vgpu
