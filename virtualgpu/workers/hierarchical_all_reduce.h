// The all-reduce of several workers, each with its own devices (TensorFlow's collective ops and
// Horovod do it in this shape):
//   1. within the worker, over its devices, with one of the algorithms of the table (ring,
//      reduce-to-one, one-shot, nccl), which leaves the worker's sum in every device's buffer;
//   2. across workers, the buffer of the worker's first device summed with the other workers'
//      (WorkerGroup::all_reduce_sum: MPI_Allreduce between processes, NCCL across processes on
//      GPUs), one opaque step for the observer, as NCCL's is;
//   3. back to every device: each other device copies the first device's buffer, one step whose
//      transfers the observer sees.
// Steps 2 and 3 are run by the group's ranks like every other step, so a watcher of the steps
// (the GUI, a test) sees the within-worker algorithm's steps, then "across workers", then
// "back to every device".
#pragma once

#include <memory>
#include <string>

#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::vgpu {

inline constexpr std::string_view kAcrossWorkersPhase = "across workers";
inline constexpr std::string_view kBackToDevicesPhase = "back to every device";

class HierarchicalAllReduce final : public AllReduce {
 public:
  // `within`: the algorithm over this worker's devices; `workers`: outlives this.
  HierarchicalAllReduce(std::unique_ptr<AllReduce> within, WorkerGroup& workers);

  // The within-worker algorithm's name: the one asked for, whose steps come first.
  std::string name() const override { return within_->name(); }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override;
  int num_steps(int n) const override { return within_->num_steps(n) + 2; }
  // The within-worker traffic, the buffer read and written once across workers, and the copy
  // back to the n - 1 other devices (a read and a write each).
  double bytes_moved(int n, std::size_t bytes) const override;

  const AllReduce& within() const { return *within_; }

 private:
  std::unique_ptr<AllReduce> within_;
  WorkerGroup* workers_;
};

}  // namespace mirrorlab::vgpu
