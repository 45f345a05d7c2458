// NCCL across processes in a build without NCCL (see nccl_workers.h): says so.
#include <stdexcept>

#include "virtualgpu/mpi/nccl_workers.h"

namespace mirrorlab::vgpu {

bool nccl_across_processes_built() { return false; }

std::unique_ptr<WorkerGroup> make_nccl_worker_group(MpiWorkerGroup&, Device&) {
  throw std::invalid_argument(
      "this mirrorlab was built without NCCL: the workers sum GPU buffers over MPI, through host "
      "memory");
}

}  // namespace mirrorlab::vgpu
