// TensorFlow's ReductionToOneDevice: copy every value to one device, add them there, copy the
// sum back ("Reduce to /gpu:0 then broadcast to ('/gpu:0', '/gpu:1')").
// Two steps for n > 1: "reduce" (the destination adds every other buffer into its own, in rank
// order) then "broadcast" (every other rank copies the destination's buffer). None for n == 1.
#pragma once

#include "virtualgpu/collective.h"

namespace mirrorlab::vgpu {

class ReduceToOneDevice final : public AllReduce {
 public:
  explicit ReduceToOneDevice(int destination = 0) : destination_(destination) {}
  std::string name() const override { return std::string(kReduceToOneName); }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override;
  int num_steps(int n) const override { return n > 1 ? 2 : 0; }
  // Reads n*S, writes (n-1)*S to the destination, then reads S and writes S per other rank.
  double bytes_moved(int n, std::size_t bytes) const override;
  int destination() const { return destination_; }

 private:
  int destination_;
};

}  // namespace mirrorlab::vgpu
