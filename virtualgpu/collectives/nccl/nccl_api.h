// The thin interface between NCCL and our code (as cuda/cuda_api.h is for the CUDA runtime): the
// NCCL all-reduce (nccl_all_reduce.cpp) makes every NCCL call through an NcclApi, so it runs on
// GPUs with the library (nccl_api_library.cpp, NCCL builds) and, in every build, against the
// tests' fake, which checks the calls' order and arguments.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::vgpu {

using NcclComm = void*;  // an ncclComm_t

class NcclApi {
 public:
  virtual ~NcclApi() = default;
  // One communicator per ordinal, rank i on GPU ordinals[i] (ncclCommInitAll). Throws
  // std::runtime_error with the call, file:line and NCCL's words.
  virtual std::vector<NcclComm> init_all(const std::vector<int>& ordinals) = 0;
  // Across processes: rank 0 makes the communicator's id (ncclGetUniqueId, its bytes), every
  // rank gets it from rank 0 (over MPI) and joins with it, on its current GPU (ncclCommInitRank:
  // collective, it returns once all `ranks` have joined). Throw as init_all does; init_rank
  // throws std::invalid_argument for an id that is not one unique_id() could have made.
  virtual std::string unique_id() = 0;
  virtual NcclComm init_rank(int ranks, const std::string& id, int rank) = 0;
  virtual void destroy(NcclComm comm) noexcept = 0;
  virtual void group_start() = 0;
  // Rank `comm`'s sum all-reduce of `count` floats in place, queued on `stream` (inside a group:
  // NCCL launches the group's calls together at group_end; alone, for a communicator of one rank
  // per process).
  virtual void all_reduce_sum(float* data, std::size_t count, NcclComm comm, GpuStream stream) = 0;
  virtual void group_end() = 0;
};

// The library's (NCCL builds); in a build without NCCL, throws std::logic_error (the nccl row of
// the table refuses first, saying why).
NcclApi& process_nccl_api();

}  // namespace mirrorlab::vgpu
