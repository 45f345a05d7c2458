// NCCL across processes (see nccl_workers.h): the NCCL library's NcclApi over MPI's group. Built
// only with MPI and NCCL; what it does is NcclWorkerGroup's
// (virtualgpu/workers/nccl_worker_group.h), tested against fakes in every build.
#include "virtualgpu/mpi/nccl_workers.h"

#include "virtualgpu/collectives/nccl/nccl_api.h"
#include "virtualgpu/workers/nccl_worker_group.h"

namespace mirrorlab::vgpu {

bool nccl_across_processes_built() { return true; }

std::unique_ptr<WorkerGroup> make_nccl_worker_group(MpiWorkerGroup& mpi, Device& gpu) {
  return std::make_unique<NcclWorkerGroup>(mpi, gpu, process_nccl_api(), mpi.watch());
}

}  // namespace mirrorlab::vgpu
