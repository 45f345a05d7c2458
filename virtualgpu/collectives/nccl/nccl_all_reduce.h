// NCCL all-reduce: one NCCL communicator per device, made together over the devices' CUDA
// ordinals (ncclCommInitAll), and one grouped launch per all-reduce (ncclGroupStart, one
// ncclAllReduce per rank on its device's stream, ncclGroupEnd).
//
// Why grouped from one thread rather than one call per device thread: our ranks run on their
// devices' threads and meet at a barrier; the last one to arrive issues the NCCL calls for all
// of them while the others wait (CollectiveGroup::end_step with a whole-group action). That is
// NCCL's documented way for one thread to drive several ranks of one process, it cannot
// deadlock on the order in which threads reach NCCL, and it works the same when two ranks share
// a GPU (NCCL 2.30's multi-rank mode). The observer sees one opaque step with its time.
//
// NCCL before 2.30 refuses two ranks on one GPU ("Duplicate GPU detected"); 2.30 added an
// experimental NCCL_MULTI_RANK_GPU_ENABLE=1 for up to 2 ranks per GPU. The version that counts is
// the library's, asked at run time (ncclGetVersion, which needs no GPU), not the header's.
//
// Every NCCL call goes through an NcclApi (nccl_api.h), every CUDA call through the devices'
// CudaApi: nccl_all_reduce.cpp is built everywhere and tested against fakes; the library's
// NcclApi and nccl_runtime() are nccl_api_library.cpp (NCCL builds) or nccl_unavailable.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

// NCCL version codes as ncclGetVersion gives them: 22809 for 2.28.9.
inline constexpr int kNcclMultiRankGpuVersion = 23000;  // 2.30.0
inline constexpr int kNcclMaxRanksPerGpu = 2;           // in the experimental multi-rank mode

struct NcclRuntime {
  bool built = false;    // this build links NCCL
  int version_code = 0;  // the library's, from ncclGetVersion; 0 when not built
};

// What this build and its NCCL library offer (never throws, needs no GPU).
NcclRuntime nccl_runtime();

// "2.28.9" for 22809 (and the pre-2.9 encoding, 2704 for 2.7.4); "none" for 0.
std::string nccl_version_text(int version_code);

// NCCL communicators over `devices` (CUDA devices; rank i = devices[i]), which the nccl row of
// the table (all_reduce_algorithms.h) has found able to run it. `multi_rank`: two devices share
// a GPU, NCCL 2.30's experimental mode is turned on (NCCL_MULTI_RANK_GPU_ENABLE=1). Throws a
// vgpu::CudaError-style std::runtime_error naming the NCCL call, file:line and NCCL's words when
// a call fails.
std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& devices,
                                                bool multi_rank);
class NcclApi;
// The same over another NcclApi (a test's fake).
std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& devices,
                                                bool multi_rank, NcclApi& nccl);

}  // namespace mirrorlab::vgpu
