#include "virtualgpu/all_reduce_choice.h"

#include <stdexcept>

#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

constexpr const char* kVirtualFallback =
    "NCCL is not supported when using virtual GPUs, falling back to reduction to one device";

}  // namespace

AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl) {
  if (replicas.empty()) throw std::invalid_argument("an all-reduce needs at least one replica");
  AllReduceChoice choice;
  if (requested == kAutoAllReduce) {
    // What TensorFlow does: NCCL when every replica has a physical GPU of its own.
    const int most = most_replicas_per_gpu(replicas);
    choice.row = find_all_reduce(most == 1 && nccl.built ? kNcclName : kReduceToOneName);
    if (most == 1 && !nccl.built) {
      // TensorFlow's words, in which the algorithm's name appears as it does here.
      choice.warnings.push_back("Nccl kernel is not found, not using " + std::string(kNcclName) +
                                " allreduce.");
    } else if (most != 1) {
      choice.warnings.push_back(kVirtualFallback);
      if (most == kNcclMaxRanksPerGpu && nccl.version_code >= kNcclMultiRankGpuVersion) {
        choice.info.push_back("NCCL " + nccl_version_text(nccl.version_code) +
                              " has an EXPERIMENTAL mode for 2 ranks per GPU: ask for " +
                              std::string(kNcclName) + " to use it");
      }
    }
  } else {
    choice.row = find_all_reduce(requested);
    if (choice.row == nullptr) {
      throw AllReduceUnavailable(requested, "unknown all-reduce '" + std::string(requested) +
                                                "': choose " + std::string(kAutoAllReduce) +
                                                ", " + all_reduce_name_list());
    }
    const std::string why = choice.row->unavailable(replicas, nccl, &choice.nccl_multi_rank);
    if (!why.empty()) throw AllReduceUnavailable(choice.row->name, why);
  }
  choice.algorithm = std::string(choice.row->name);
  choice.info.push_back(choice.row->describe(replicas, nccl, choice.nccl_multi_rank));
  return choice;
}

std::string device_tuple(const std::vector<std::string>& names) {
  std::string tuple = "(";
  for (std::size_t i = 0; i < names.size(); ++i) tuple += (i ? ", '" : "'") + names[i] + "'";
  return tuple + (names.size() == 1 ? ",)" : ")");
}

}  // namespace mirrorlab::vgpu
