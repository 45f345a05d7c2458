// The MPI communicator of a worker group, for what builds on it inside virtualgpu/mpi/ (NCCL
// across processes broadcasts its unique id over it). Includes mpi.h.
#pragma once

#include <mpi.h>

namespace mirrorlab::vgpu {

// What MpiWorkerGroup::communicator() gives: the group's own MPI_Comm.
struct MpiCommunicator {
  MPI_Comm comm = MPI_COMM_NULL;
};

// Throws std::runtime_error "<call> failed: <MPI's words>" unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace mirrorlab::vgpu
