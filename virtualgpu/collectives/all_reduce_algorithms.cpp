#include "virtualgpu/collectives/all_reduce_algorithms.h"

#include <cctype>
#include <map>
#include <utility>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/collectives/one_shot_all_reduce.h"
#include "virtualgpu/collectives/reduce_to_one.h"
#include "virtualgpu/collectives/ring_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

std::string name(std::string_view n) { return std::string(n); }

// The algorithms that run anywhere: CPU-backed virtual GPUs, logical or physical CUDA GPUs.
AllReduceRefusal runs_anywhere(const std::vector<ReplicaPlacement>&, const NcclRuntime&,
                               bool* experimental) {
  *experimental = false;
  return {};
}

// ---- reduce-to-one ------------------------------------------------------------------------
std::unique_ptr<AllReduce> make_reduce_to_one(const std::vector<Device*>&, int destination, bool) {
  if (destination < 0) {
    throw std::invalid_argument(name(kReduceToOneName) +
                                " destination must be a device index (0, 1, ...)");
  }
  return std::make_unique<ReduceToOneDevice>(destination);
}
std::string describe_reduce_to_one(const std::vector<ReplicaPlacement>& replicas,
                                   const NcclRuntime&, bool) {
  return "All-reduce: " + name(kReduceToOneName) + " (every replica's gradients added into " +
         replicas[0].name + ", then the sum copied back to every replica: 2 steps)";
}
std::string tensorflow_log_reduce_to_one(const std::vector<ReplicaPlacement>& replicas, int, int) {
  return "Reduce to " + tensorflow_device_name(replicas[0].name) + " then broadcast to " +
         tensorflow_device_tuple(replicas) + ".";
}

// TensorFlow's CollectiveAllReduce: inside model.fit's tf.function the gradient tensors go into
// packs (by default one, num_packs = 1), each concatenated and all-reduced at once, as mirrorlab's
// flat gradient buffer is, whole or in packs (core/strategy/gradient_packs.h).
std::string collective_log(const std::vector<ReplicaPlacement>& replicas, int tensors, int packs,
                           const char* implementation) {
  const std::string n = std::to_string(replicas.size());
  return "Collective all_reduce tensors: " + std::to_string(tensors) +
         " all_reduces, num_devices = " + n + ", group_size = " + n +
         ", implementation = CommunicationImplementation." + implementation +
         ", num_packs = " + std::to_string(packs);
}

// ---- ring ---------------------------------------------------------------------------------
std::unique_ptr<AllReduce> make_ring(const std::vector<Device*>&, int, bool) {
  return std::make_unique<RingAllReduce>();
}
std::string describe_ring(const std::vector<ReplicaPlacement>& replicas, const NcclRuntime&, bool) {
  return "All-reduce: " + name(kRingName) + " (reduce-scatter then all-gather, " +
         std::to_string(2 * (replicas.size() - 1)) + " steps per all-reduce)";
}
std::string tensorflow_log_ring(const std::vector<ReplicaPlacement>& replicas, int tensors,
                                int packs) {
  return collective_log(replicas, tensors, packs, "RING");
}

// ---- one-shot -----------------------------------------------------------------------------
std::unique_ptr<AllReduce> make_one_shot(const std::vector<Device*>&, int, bool) {
  return std::make_unique<OneShotAllReduce>();
}
std::string describe_one_shot(const std::vector<ReplicaPlacement>& replicas, const NcclRuntime&,
                              bool) {
  return "All-reduce: " + name(kOneShotName) + " (each replica sums its slice of all " +
         std::to_string(replicas.size()) +
         " buffers and writes it into all of them: one step, every byte read once and written "
         "once)";
}

std::string no_tensorflow_log(const std::vector<ReplicaPlacement>&, int, int) { return ""; }

// ---- nccl ---------------------------------------------------------------------------------
AllReduceRefusal nccl_unavailable(const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl, bool* experimental) {
  *experimental = false;
  std::vector<std::string> others{std::string(kAutoAllReduce)};  // every other row, in order
  for (const std::string& n : all_reduce_names()) {
    if (n != kNcclName) others.push_back(n);
  }
  const std::string not_built = "this build has no NCCL, so the " + name(kNcclName) +
                                " all-reduce is not in this build (NCCL was not found when "
                                "mirrorlab was configured: nccl.h and libnccl under the CUDA "
                                "toolkit)";
  const int most = most_replicas_per_gpu(replicas);
  if (most == 0) {  // TensorFlow's reason first; the build's too, where it also holds
    return {
        "NCCL all-reduce needs one CUDA GPU per replica, but these are CPU-backed virtual "
        "GPUs" +
            (nccl.built ? std::string() : ", and " + not_built),
        ": ", others, "", ""};
  }
  if (!nccl.built) return {not_built, "; ", others, "", ""};
  if (most == 1) return {};
  const std::string version = nccl_version_text(nccl.version_code);
  if (nccl.version_code < kNcclMultiRankGpuVersion) {
    return {"NCCL all-reduce cannot run " + std::to_string(most) + " replicas on one GPU: NCCL " +
                version +
                " refuses two ranks on the same GPU (\"Duplicate GPU detected\"); NCCL 2.30 added "
                "an experimental mode for up to 2 ranks per GPU",
            ". ",
            {std::string(kAutoAllReduce), name(kOneShotName)},
            name(kRingName),
            " for logical GPUs that share a card"};
  }
  if (most > kNcclMaxRanksPerGpu) {
    return {"NCCL all-reduce cannot run " + std::to_string(most) + " replicas on one GPU: NCCL " +
                version + "'s experimental multi-rank mode allows at most 2 ranks per GPU",
            ". ",
            {std::string(kAutoAllReduce), name(kOneShotName), name(kRingName)},
            "",
            ", or at most 2 logical GPUs per card"};
  }
  *experimental = true;
  return {};
}
std::unique_ptr<AllReduce> make_nccl(const std::vector<Device*>& devices, int, bool experimental) {
  return make_nccl_all_reduce(devices, experimental);
}
std::string describe_nccl(const std::vector<ReplicaPlacement>& replicas, const NcclRuntime& nccl,
                          bool experimental) {
  std::string line = "All-reduce: " + name(kNcclName) + " (NCCL " +
                     nccl_version_text(nccl.version_code) + ", one communicator over " +
                     std::to_string(replicas.size()) + " ranks, grouped calls)";
  if (experimental) {
    line += ". EXPERIMENTAL: NCCL_MULTI_RANK_GPU_ENABLE=1, two ranks per GPU (NCCL 2.30+)";
  }
  return line;
}
std::string tensorflow_log_nccl(const std::vector<ReplicaPlacement>& replicas, int tensors,
                                int packs) {
  return collective_log(replicas, tensors, packs, "NCCL");
}

}  // namespace

const std::vector<AllReduceAlgorithm>& all_reduce_algorithms() {
  static const std::vector<AllReduceAlgorithm> table = {
      {kReduceToOneName,
       "TensorFlow's ReductionToOneDevice: every replica's gradient is added into one device, "
       "then the sum is copied back to every replica (2 steps, 5(N-1)S bytes)",
       runs_anywhere, make_reduce_to_one, describe_reduce_to_one, tensorflow_log_reduce_to_one,
       "MirroredStrategy(cross_device_ops=tf.distribute.ReductionToOneDevice()); older "
       "TensorFlow (the Colab note's) fell back to it on virtual GPUs",
       timing::reduce_to_one_schedule},
      {kRingName,
       "reduce-scatter then all-gather, each replica passing chunks to the next: 2(N-1) "
       "steps, each moving S/N bytes per replica (TensorFlow's choice on CPUs and logical GPUs)",
       runs_anywhere, make_ring, describe_ring, tensorflow_log_ring,
       "TensorFlow 2.21's default on CPU devices and on logical GPUs: CollectiveAllReduce with "
       "implementation RING",
       [](int ranks, double bytes, int) { return timing::ring_schedule(ranks, bytes); }},
      {kOneShotName,
       "one step: each replica sums its slice of all N buffers and writes it into all of them "
       "(2NS bytes, the least a shared memory allows)",
       runs_anywhere, make_one_shot, describe_one_shot, no_tensorflow_log,
       "none: mirrorlab's own, for replicas that share one memory",
       [](int ranks, double bytes, int) { return timing::one_shot_schedule(ranks, bytes); }},
      {kNcclName,
       "NVIDIA's collective library: one CUDA GPU per replica (TensorFlow's default there)",
       nccl_unavailable, make_nccl, describe_nccl, tensorflow_log_nccl,
       "TensorFlow 2.21's default with one physical GPU per replica: CollectiveAllReduce with "
       "implementation NCCL",
       nullptr},
  };
  return table;
}

const AllReduceAlgorithm* find_all_reduce(std::string_view wanted) {
  for (const AllReduceAlgorithm& a : all_reduce_algorithms()) {
    if (a.name == wanted) return &a;
  }
  return nullptr;
}

std::vector<std::string> all_reduce_names() {
  std::vector<std::string> names;
  for (const AllReduceAlgorithm& a : all_reduce_algorithms()) names.emplace_back(a.name);
  return names;
}

std::vector<std::string> modelled_all_reduce_names() {
  std::vector<std::string> names;
  for (const AllReduceAlgorithm& a : all_reduce_algorithms()) {
    if (a.schedule != nullptr) names.emplace_back(a.name);
  }
  return names;
}

std::string cannot_run_on(const AllReduceAlgorithm& algorithm, const timing::Topology& machine,
                          int ranks) {
  if (algorithm.schedule == nullptr) return "";
  // Whether a schedule can run does not depend on its bytes: any size asks.
  return timing::cannot_run(algorithm.schedule(ranks, 4096, 0), machine);
}

std::string refusal_text(const AllReduceRefusal& r, const AllReduceWords& words) {
  if (r.instead.empty()) return r.reason;
  std::string text = r.reason + r.joint;
  std::string verb = words.verb;
  if (r.joint == ". " && !verb.empty()) {
    verb[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(verb[0])));
  }
  text += verb;
  for (std::size_t i = 0; i < r.instead.size(); ++i) {
    text += i == 0 ? " " : i + 1 == r.instead.size() ? " or " : ", ";
    text += words.name(r.instead[i]);
    if (r.instead[i] != kAutoAllReduce) continue;
    if (!r.auto_picks.empty()) {
      text += " (";
      text += words.the(r.auto_picks);
      text += ", as TensorFlow chooses there)";
    } else {
      text += words.auto_alone;
    }
  }
  return text + r.tail;
}

std::string all_reduce_name_list(std::string_view last, std::string_view except) {
  std::vector<std::string> names;
  for (const AllReduceAlgorithm& a : all_reduce_algorithms()) {
    if (a.name != except) names.emplace_back(a.name);
  }
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i + 1 == names.size() && i > 0) {
      list += ' ';  // appended piece by piece: GCC 12 warns (wrongly) on " " + string
      list += last;
      list += ' ';
    } else if (i > 0) {
      list += ", ";
    }
    list += names[i];
  }
  return list;
}

std::unique_ptr<AllReduce> make_all_reduce(std::string_view wanted,
                                           const std::vector<Device*>& devices, int destination) {
  const AllReduceAlgorithm* row = find_all_reduce(wanted);
  if (row == nullptr) {
    throw AllReduceUnavailable(wanted, "unknown all-reduce algorithm '" + std::string(wanted) +
                                           "': choose " + all_reduce_name_list());
  }
  bool experimental = false;
  AllReduceRefusal refused =
      row->unavailable(placements_of(devices), nccl_runtime(), &experimental);
  if (!refused.empty()) throw AllReduceUnavailable(row->name, std::move(refused));
  return row->make(devices, destination, experimental);
}

std::unique_ptr<AllReduce> make_all_reduce(std::string_view wanted, int destination) {
  const AllReduceAlgorithm* row = find_all_reduce(wanted);
  if (row != nullptr && row->unavailable != runs_anywhere) {
    throw AllReduceUnavailable(
        row->name, "the " + std::string(row->name) + " all-reduce needs its devices: pass them");
  }
  return make_all_reduce(wanted, {}, destination);
}

}  // namespace mirrorlab::vgpu
