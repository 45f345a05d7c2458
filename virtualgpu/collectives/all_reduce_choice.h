// Which all-reduce a MirroredStrategy uses, and what it says about it: a pure function of where
// the replicas are (device kinds, CUDA ordinals), what was asked for and which NCCL there is,
// so that every case is tested without a GPU.
//
// "auto" does what TensorFlow 2.21's MirroredStrategy does (run and checked by
// scripts/check-tensorflow): CollectiveAllReduce with NCCL when every replica has a physical GPU
// of its own, and with RING on CPU devices and on logical GPUs carved from one card. So auto is
// nccl on separate GPUs (ring where this build has no NCCL, saying so) and ring everywhere else.
// TensorFlow 2.21 logs no warning about it. Older TensorFlow (the Colab note) warned "NCCL is
// not supported when using virtual GPUs, fallingback to reduction to one device" and reduced to
// one device: that is reduce-to-one here, for the asking.
// Asking for "nccl" where it cannot run is an error that says why; on logical GPUs sharing a
// card with NCCL 2.30+ it runs in NCCL's experimental multi-rank mode, labelled as such.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "timing/topology.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

struct AllReduceChoice {
  const AllReduceAlgorithm* row = nullptr;  // the chosen algorithm
  std::string algorithm;                    // its name
  // mirrorlab's own lines, in order: how the algorithm runs here (the row's describe), then,
  // for auto, why it is TensorFlow's choice and what else there is.
  std::vector<std::string> notes;
  bool nccl_multi_rank = false;  // NCCL's experimental multi-rank-per-GPU mode
};

// `requested`: auto or a name of the table. Throws AllReduceUnavailable with a sentence for an
// unknown name, and for an algorithm that cannot run on `replicas` (nccl on virtual GPUs).
AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl);

// What auto runs on a machine of the timing model (`mirrorlab compare`, the GUI's Compare panel,
// the lessons' model values): NCCL where the topology models NCCL (a GPU of its own per replica),
// else the ring, as choose_all_reduce() picks on such devices. Its `schedule` is nullptr for NCCL
// (timing::all_reduce_time() then asks NCCL's own model).
const AllReduceAlgorithm& modelled_tensorflow_choice(const timing::Topology& machine);

// A Python tuple of names, as TensorFlow logs it: "('/gpu:0', '/gpu:1')", "('/gpu:0',)".
std::string device_tuple(const std::vector<std::string>& names);

}  // namespace mirrorlab::vgpu
