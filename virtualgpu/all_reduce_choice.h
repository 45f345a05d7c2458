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

#include "virtualgpu/device.h"
#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::vgpu {

struct ReplicaPlacement {
  std::string name;  // "/gpu:0"
  DeviceKind kind = DeviceKind::kCpuVirtualGpu;
  int cuda_ordinal = -1;  // the physical GPU, -1 for a CPU-backed virtual GPU
};

std::vector<ReplicaPlacement> placements_of(const std::vector<Device*>& devices);

struct AllReduceChoice {
  std::string algorithm;              // "nccl", "reduce-to-one", "ring" or "one-shot"
  std::vector<std::string> warnings;  // what TensorFlow logs as WARNING, once
  std::vector<std::string> info;      // what it logs as INFO
  bool nccl_multi_rank = false;       // NCCL's experimental multi-rank-per-GPU mode
};

// `requested`: "auto", "nccl", "reduce-to-one", "ring" or "one-shot". Throws
// std::invalid_argument with a sentence for an unknown name, and for "nccl" where it cannot run.
AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl);

// TensorFlow's device tuple: "('/gpu:0', '/gpu:1')", "('/gpu:0',)".
std::string device_tuple(const std::vector<std::string>& names);

}  // namespace mirrorlab::vgpu
