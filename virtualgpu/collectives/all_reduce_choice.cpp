#include "virtualgpu/collectives/all_reduce_choice.h"

#include <cctype>
#include <stdexcept>
#include <utility>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

// Why auto chose what it chose, in mirrorlab's words (TensorFlow 2.21 logs nothing about it).
// `most`: the most replicas sharing one GPU (most_replicas_per_gpu).
std::vector<std::string> auto_notes(int most, const NcclRuntime& nccl, std::string_view chosen) {
  if (most == 1 && nccl.built) return {};  // nccl, as TensorFlow: nothing to explain
  std::vector<std::string> notes;
  if (most == 1) {
    notes.push_back(
        "auto: this build has no NCCL, which TensorFlow would use here "
        "(CollectiveAllReduce, implementation NCCL); " +
        std::string(chosen) + " instead");
    return notes;
  }
  notes.push_back("auto: " + std::string(chosen) + ", as TensorFlow 2.21 chooses on " +
                  (most == 0 ? "CPU devices" : "logical GPUs sharing a card") +
                  " (CollectiveAllReduce, implementation RING). Older TensorFlow, as in the "
                  "Colab note, reduced to one device instead: ask for " +
                  std::string(kReduceToOneName) + " to watch it");
  if (most == kNcclMaxRanksPerGpu && nccl.version_code >= kNcclMultiRankGpuVersion) {
    notes.push_back("NCCL " + nccl_version_text(nccl.version_code) +
                    " has an EXPERIMENTAL mode for 2 ranks per GPU: ask for " +
                    std::string(kNcclName) + " to use it");
  }
  return notes;
}

}  // namespace

AllReduceChoice choose_all_reduce(std::string_view requested,
                                  const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl) {
  if (replicas.empty()) throw std::invalid_argument("an all-reduce needs at least one replica");
  AllReduceChoice choice;
  std::vector<std::string> why;
  if (requested == kAutoAllReduce) {
    // What TensorFlow 2.21 does: NCCL when every replica has a physical GPU of its own, else a
    // ring (see the header).
    const int most = most_replicas_per_gpu(replicas);
    choice.row = find_all_reduce(most == 1 && nccl.built ? kNcclName : kRingName);
    why = auto_notes(most, nccl, choice.row->name);
  } else {
    choice.row = find_all_reduce(requested);
    if (choice.row == nullptr) {
      throw AllReduceUnavailable(requested, "unknown all-reduce '" + std::string(requested) +
                                                "': choose " + std::string(kAutoAllReduce) + ", " +
                                                all_reduce_name_list());
    }
    AllReduceRefusal refused = choice.row->unavailable(replicas, nccl, &choice.nccl_multi_rank);
    if (!refused.empty()) throw AllReduceUnavailable(choice.row->name, std::move(refused));
  }
  choice.algorithm = std::string(choice.row->name);
  choice.notes.push_back(choice.row->describe(replicas, nccl, choice.nccl_multi_rank));
  choice.notes.insert(choice.notes.end(), why.begin(), why.end());
  return choice;
}

const AllReduceAlgorithm& modelled_tensorflow_choice(const timing::Topology& machine) {
  return *find_all_reduce(machine.has_nccl ? kNcclName : kRingName);
}

}  // namespace mirrorlab::vgpu
