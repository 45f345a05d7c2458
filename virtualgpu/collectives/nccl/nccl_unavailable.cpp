// What a build without NCCL has of it: nothing, and it says so.
#include <stdexcept>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/collectives/nccl/nccl_api.h"

namespace mirrorlab::vgpu {

NcclRuntime nccl_runtime() { return NcclRuntime{}; }

// Never reached through the table: its nccl row says first that this build has no NCCL.
NcclApi& process_nccl_api() { throw std::logic_error("the NCCL library in a build without NCCL"); }

}  // namespace mirrorlab::vgpu
