// Which all-reduce a MirroredStrategy uses, and what it says about it: a pure function of where
// the replicas are (device kinds, CUDA ordinals), what was asked for and which NCCL there is,
// so that every case is tested without a GPU.
//
// "auto" does what TensorFlow does: NCCL when every replica has a physical GPU of its own (and
// the build has NCCL); otherwise ReductionToOneDevice, saying once, in TensorFlow's words,
//   NCCL is not supported when using virtual GPUs, falling back to reduction to one device
//   Reduce to /gpu:0 then broadcast to ('/gpu:0', '/gpu:1').
// Asking for "nccl" where it cannot run is an error that says why; on logical GPUs sharing a
// card with NCCL 2.30+ it runs in NCCL's experimental multi-rank mode, labelled as such.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/device.h"

namespace mirrorlab::vgpu {

// What to ask for to get what TensorFlow chooses; not an algorithm of its own.
inline constexpr std::string_view kAutoAllReduce = "auto";

struct AllReduceChoice {
  const AllReduceAlgorithm* row = nullptr;  // the chosen algorithm
  std::string algorithm;                    // its name
  std::vector<std::string> warnings;        // what TensorFlow logs as WARNING, once
  std::vector<std::string> info;            // what it logs as INFO
  bool nccl_multi_rank = false;             // NCCL's experimental multi-rank-per-GPU mode
};

// `requested`: auto or a name of the table. Throws AllReduceUnavailable with a sentence for an
// unknown name, and for an algorithm that cannot run on `replicas` (nccl on virtual GPUs).
AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl);

// TensorFlow's device tuple: "('/gpu:0', '/gpu:1')", "('/gpu:0',)".
std::string device_tuple(const std::vector<std::string>& names);

}  // namespace mirrorlab::vgpu
