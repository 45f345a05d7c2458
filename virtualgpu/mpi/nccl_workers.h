// NCCL across the workers' processes (built with MPI and NCCL): NcclWorkerGroup
// (virtualgpu/workers/nccl_worker_group.h) over MPI's group and the NCCL library. Worker 0 makes
// the communicator's unique id (ncclGetUniqueId), MPI carries it to every worker, and each joins
// with ncclCommInitRank. The step across workers then sums the gradients where they are, on the GPU
// (ncclAllReduce on that device's stream), instead of through host memory; everything else (the
// statistics, the flags, the initial broadcast) still goes over MPI.
//
// NCCL before 2.30 refuses two ranks of one communicator on one GPU, so workers sharing a GPU
// cannot use it: make_nccl_worker_group says why, and the caller keeps MPI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "virtualgpu/mpi/mpi_worker_group.h"

namespace mirrorlab::vgpu {

// Whether this build has NCCL (else make_nccl_worker_group always says why not).
bool nccl_across_processes_built();

// A group over `mpi` whose device buffers on `gpu` (a CUDA device of this worker: the first of
// its devices) are summed by NCCL across the workers. Collective: every worker calls it. Throws
// std::runtime_error naming the NCCL call and NCCL's words when the communicator cannot be made
// (then on every worker: ncclCommInitRank fails on all of them together), and
// std::invalid_argument for a device that is not a CUDA GPU.
std::unique_ptr<WorkerGroup> make_nccl_worker_group(MpiWorkerGroup& mpi, Device& gpu);

}  // namespace mirrorlab::vgpu
