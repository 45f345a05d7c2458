// The all-reduce algorithms, one row each, as nccl-tests has one struct per collective: the one
// place their names are written, and what everything else reads. The command line's choices and
// help, the GUI's list, bench, compare, the log lines and every message that lists algorithms
// come from here; the timing model and the MPI transport plug in as rows.
//
// A row says what the algorithm is, whether it can run on given replicas (and, if not, why, in a
// sentence), how to make one, and the line that tells the user it is used. NCCL's availability
// is decided in its row, once: choose_all_reduce() and make_all_reduce() both ask it there.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "timing/schedule.h"
#include "timing/topology.h"
#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/collectives/replica_placement.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

// Why an algorithm cannot run on given replicas, and what to choose instead, as names of the
// table's rows (kAutoAllReduce: TensorFlow's own choice there), for each face to say in its own
// words (the command line's algorithm names, Python's classes): refusal_text().
struct AllReduceRefusal {
  std::string reason;                // "" where it can run
  std::string joint = ": ";          // between the reason and the advice: ": ", "; " or ". "
  std::vector<std::string> instead;  // what can run, in the order said (none: the reason alone)
  std::string auto_picks;            // what auto chooses there, said beside it ("": not said)
  std::string tail;                  // after the names ("for logical GPUs that share a card")
  bool empty() const { return reason.empty(); }
};

// How a face says the algorithms in advice: the command line's words by default ("use auto,
// reduce-to-one, ring or one-shot"; "Use auto (the ring, as TensorFlow chooses there) ...").
struct AllReduceWords {
  std::string verb = "use";  // capitalised after a ". "
  // An algorithm's name, and the same as the object of a sentence ("ring", "the ring").
  std::string (*name)(std::string_view algorithm) = [](std::string_view a) {
    return std::string(a);
  };
  std::string (*the)(std::string_view algorithm) = [](std::string_view a) {
    return "the " + std::string(a);
  };
  std::string auto_alone;  // after auto's name where auto_picks is not said ("": nothing)
};

// The refusal as one sentence in `words`.
std::string refusal_text(const AllReduceRefusal& refusal, const AllReduceWords& words = {});

struct AllReduceAlgorithm {
  std::string_view name;
  std::string_view what;  // one line, for the command line's help and the GUI: how it works
  // Empty when it can run on `replicas` with this NCCL; else why not and what can. Sets
  // *experimental when it can only run in an experimental mode (NCCL's ranks sharing a GPU).
  AllReduceRefusal (*unavailable)(const std::vector<ReplicaPlacement>& replicas,
                                  const NcclRuntime& nccl, bool* experimental);
  // Makes one over `devices` (availability checked first); `destination`: where reduce-to-one
  // reduces.
  std::unique_ptr<AllReduce> (*make)(const std::vector<Device*>& devices, int destination,
                                     bool experimental);
  // mirrorlab's line that says it is used and how it runs here.
  std::string (*describe)(const std::vector<ReplicaPlacement>& replicas, const NcclRuntime& nccl,
                          bool experimental);
  // What TensorFlow 2.21 logs when it all-reduces a model's `tensors` gradient tensors this way
  // over `replicas`, in `packs` packs (checked by scripts/check-tensorflow); "" where TensorFlow
  // has no such algorithm.
  std::string (*tensorflow_log)(const std::vector<ReplicaPlacement>& replicas, int tensors,
                                int packs);
  // How a TensorFlow program gets it, or that it cannot.
  std::string_view in_tensorflow;
  // What it moves, step by step, for the timing model (timing/schedule.h); nullptr where the
  // library decides (NCCL: timing/nccl_model.h models its choice).
  timing::Schedule (*schedule)(int ranks, double bytes, int destination);
};

// In the order they are offered: reduce-to-one, ring, one-shot, nccl.
const std::vector<AllReduceAlgorithm>& all_reduce_algorithms();
// The row named `name`, or nullptr.
const AllReduceAlgorithm* find_all_reduce(std::string_view name);
std::vector<std::string> all_reduce_names();
// The algorithms the timing model has a schedule of (every one but nccl), in the table's order.
std::vector<std::string> modelled_all_reduce_names();
// "" where `algorithm`'s schedule can run on the first `ranks` GPUs of `machine`; else why not,
// as timing::cannot_run says it (the one-shot without peer access, or across nodes). "" for a
// row without a schedule (NCCL: where it runs is the machine's has_nccl).
std::string cannot_run_on(const AllReduceAlgorithm& algorithm, const timing::Topology& machine,
                          int ranks);

// An algorithm that is not known, or cannot run on these devices; what() says why and what
// can run instead in the command line's words (refusal(): for a face of other words).
class AllReduceUnavailable : public std::invalid_argument {
 public:
  AllReduceUnavailable(std::string_view algorithm, const std::string& why)
      : AllReduceUnavailable(algorithm, AllReduceRefusal{why, ": ", {}, "", ""}) {}
  AllReduceUnavailable(std::string_view algorithm, AllReduceRefusal refusal)
      : std::invalid_argument(refusal_text(refusal)),
        algorithm_(algorithm),
        refusal_(std::move(refusal)) {}
  const std::string& algorithm() const { return algorithm_; }
  const AllReduceRefusal& refusal() const { return refusal_; }

 private:
  std::string algorithm_;
  AllReduceRefusal refusal_;
};

// The row's make(), after its unavailable(): throws AllReduceUnavailable for an unknown name and
// for an algorithm that cannot run on `devices`.
std::unique_ptr<AllReduce> make_all_reduce(std::string_view name,
                                           const std::vector<Device*>& devices,
                                           int destination = 0);
// Without devices (host buffers, tests): the algorithms that need none; "nccl" needs its devices.
std::unique_ptr<AllReduce> make_all_reduce(std::string_view name, int destination = 0);

}  // namespace mirrorlab::vgpu
