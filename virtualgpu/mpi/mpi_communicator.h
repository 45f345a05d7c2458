// The MPI communicator of a worker group, for what builds on it inside virtualgpu/mpi/ (NCCL
// across processes broadcasts its unique id over it). Includes mpi.h.
#pragma once

#include <mpi.h>

#include <string>

#include "virtualgpu/mpi/mpi_worker_group.h"

namespace mirrorlab::vgpu {

struct MpiWorkerGroup::Communicator {
  MPI_Comm comm = MPI_COMM_NULL;
};

struct MpiCommunicatorAccess {
  static MPI_Comm of(const MpiWorkerGroup& group) { return group.comm_->comm; }
};

// Throws std::runtime_error "<call> failed: <MPI's words>" unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace mirrorlab::vgpu
