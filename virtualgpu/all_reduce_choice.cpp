#include "virtualgpu/all_reduce_choice.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "virtualgpu/collective.h"

namespace mirrorlab::vgpu {
namespace {

constexpr const char* kVirtualFallback =
    "NCCL is not supported when using virtual GPUs, falling back to reduction to one device";

// The most replicas that share one physical GPU (0 when any replica is CPU-backed).
int most_per_gpu(const std::vector<ReplicaPlacement>& replicas) {
  std::map<int, int> per_gpu;
  int most = 0;
  for (const ReplicaPlacement& r : replicas) {
    if (r.cuda_ordinal < 0) return 0;
    most = std::max(most, ++per_gpu[r.cuda_ordinal]);
  }
  return most;
}

std::vector<std::string> names_of(const std::vector<ReplicaPlacement>& replicas) {
  std::vector<std::string> names;
  for (const ReplicaPlacement& r : replicas) names.push_back(r.name);
  return names;
}

std::string describe_algorithm(std::string_view algorithm,
                               const std::vector<ReplicaPlacement>& replicas,
                               const NcclRuntime& nccl, bool multi_rank) {
  const std::size_t n = replicas.size();
  if (algorithm == kReduceToOneName) {
    return "Reduce to " + replicas[0].name + " then broadcast to " +
           device_tuple(names_of(replicas)) + ".";
  }
  if (algorithm == kRingName) {
    return "All-reduce: ring (reduce-scatter then all-gather, " + std::to_string(2 * (n - 1)) +
           " steps per all-reduce)";
  }
  if (algorithm == kOneShotName) {
    return "All-reduce: one-shot (each replica sums its slice of all " + std::to_string(n) +
           " buffers and writes it into all of them: one step, every byte read once and written "
           "once)";
  }
  std::string line = "All-reduce: nccl (NCCL " + nccl_version_text(nccl.version_code) +
                     ", one communicator over " + std::to_string(n) + " ranks, grouped calls)";
  if (multi_rank) {
    line += ". EXPERIMENTAL: NCCL_MULTI_RANK_GPU_ENABLE=1, two ranks per GPU (NCCL 2.30+)";
  }
  return line;
}

// Why NCCL cannot run here, or "" when it can.
std::string nccl_refusal(const std::vector<ReplicaPlacement>& replicas, const NcclRuntime& nccl,
                         bool* multi_rank) {
  *multi_rank = false;
  if (!nccl.built) {
    return "NCCL all-reduce: this build has no NCCL (it was not found when mirrorlab was "
           "configured); use auto, reduce-to-one, ring or one-shot";
  }
  const int most = most_per_gpu(replicas);
  if (most == 0) {
    return "NCCL all-reduce needs one CUDA GPU per replica, but these are CPU-backed virtual "
           "GPUs (NCCL is not supported when using virtual GPUs): use auto, reduce-to-one, ring "
           "or one-shot";
  }
  if (most == 1) return "";
  const std::string version = nccl_version_text(nccl.version_code);
  if (nccl.version_code < kNcclMultiRankGpuVersion) {
    return "NCCL all-reduce cannot run " + std::to_string(most) + " replicas on one GPU: NCCL " +
           version +
           " refuses two ranks on the same GPU (\"Duplicate GPU detected\"); NCCL 2.30 added an "
           "experimental mode for up to 2 ranks per GPU. Use --allreduce auto (reduce to one "
           "device), one-shot or ring for logical GPUs that share a card";
  }
  if (most > kNcclMaxRanksPerGpu) {
    return "NCCL all-reduce cannot run " + std::to_string(most) + " replicas on one GPU: NCCL " +
           version +
           "'s experimental multi-rank mode allows at most 2 ranks per GPU. Use --allreduce "
           "auto, one-shot or ring, or at most 2 logical GPUs per card";
  }
  *multi_rank = true;
  return "";
}

}  // namespace

std::vector<ReplicaPlacement> placements_of(const std::vector<Device*>& devices) {
  std::vector<ReplicaPlacement> placements;
  for (const Device* d : devices) placements.push_back({d->name(), d->kind(), d->cuda_ordinal()});
  return placements;
}

AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl) {
  if (replicas.empty()) throw std::invalid_argument("an all-reduce needs at least one replica");
  AllReduceChoice choice;
  if (requested == "auto") {
    const int most = most_per_gpu(replicas);
    if (most == 1 && nccl.built) {
      choice.algorithm = std::string(kNcclName);
    } else {
      choice.algorithm = std::string(kReduceToOneName);
      if (most == 1) {
        choice.warnings.push_back("Nccl kernel is not found, not using nccl allreduce.");
      } else {
        choice.warnings.push_back(kVirtualFallback);
        if (most == kNcclMaxRanksPerGpu && nccl.version_code >= kNcclMultiRankGpuVersion) {
          choice.info.push_back("NCCL " + nccl_version_text(nccl.version_code) +
                                " has an EXPERIMENTAL mode for 2 ranks per GPU: ask for it with "
                                "--allreduce nccl");
        }
      }
    }
  } else if (requested == kNcclName) {
    const std::string refusal = nccl_refusal(replicas, nccl, &choice.nccl_multi_rank);
    if (!refusal.empty()) throw std::invalid_argument(refusal);
    choice.algorithm = std::string(kNcclName);
  } else if (requested == kReduceToOneName || requested == kRingName || requested == kOneShotName) {
    choice.algorithm = std::string(requested);
  } else {
    throw std::invalid_argument("unknown all-reduce '" + std::string(requested) +
                                "': choose auto, nccl, reduce-to-one, ring or one-shot");
  }
  choice.info.push_back(
      describe_algorithm(choice.algorithm, replicas, nccl, choice.nccl_multi_rank));
  return choice;
}

std::string device_tuple(const std::vector<std::string>& names) {
  std::string tuple = "(";
  for (std::size_t i = 0; i < names.size(); ++i) tuple += (i ? ", '" : "'") + names[i] + "'";
  return tuple + (names.size() == 1 ? ",)" : ")");
}

}  // namespace mirrorlab::vgpu
