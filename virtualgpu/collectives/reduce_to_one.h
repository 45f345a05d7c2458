// TensorFlow's ReductionToOneDevice: copy every value to one device, add them there, copy the
// sum back ("Reduce to /gpu:0 then broadcast to ('/gpu:0', '/gpu:1')").
// Two steps for n > 1: "reduce" (the destination adds every other buffer into its own, in rank
// order) then "broadcast" (every other rank copies the destination's buffer). None for n == 1.
#pragma once

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

class ReduceToOneDevice final : public AllReduce {
 public:
  explicit ReduceToOneDevice(int destination = 0) : destination_(destination) {}
  std::string name() const override { return std::string(kReduceToOneName); }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override;
  int num_steps(int n) const override { return n > 1 ? 2 : 0; }
  // Traffic model: n-1 additions into the destination (read 2S, write S each), then n-1 copies
  // out of it (read S, write S each): 5(n-1)S.
  double bytes_moved(int n, std::size_t bytes) const override;
  int destination() const { return destination_; }

 private:
  int destination_;
};

}  // namespace mirrorlab::vgpu
