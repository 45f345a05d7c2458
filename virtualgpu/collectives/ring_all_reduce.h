// Ring all-reduce: the buffer is cut into n chunks; n-1 reduce-scatter steps (rank r adds chunk
// (r-1-s) mod n of rank r-1 into its own) leave each rank with one fully summed chunk, then n-1
// all-gather steps (rank r copies chunk (r-s) mod n from rank r-1) hand every chunk round the
// ring: 2(n-1) steps, each moving one chunk per rank, all ranks at once.
// Chunk c covers elements [c*count/n, (c+1)*count/n): sizes differ by at most one, and some are
// empty when count < n. A pack of a larger buffer (PackFrame) keeps the whole buffer's chunks:
// in each step a rank moves the part of its chunk that lies in the pack, so an element is summed
// starting from the same rank whatever the packs (a small pack may lie in one chunk: then one
// rank moves it in each step while the others wait, the price of the same bits).
#pragma once

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

class RingAllReduce final : public AllReduce {
 public:
  std::string name() const override { return std::string(kRingName); }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override;
  int num_steps(int n) const override { return 2 * (n - 1); }
  double bytes_moved(int n, std::size_t bytes) const override;
};

}  // namespace mirrorlab::vgpu
