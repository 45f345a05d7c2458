// One-shot all-reduce: one step in which every element of every buffer is read once and
// written once. Rank r takes slice r of the elements ([r*count/n, (r+1)*count/n)), sums it over
// all n buffers in rank order and writes the sum into all n buffers. The slices are disjoint,
// so the ranks need no barrier between reading and writing, only the one at the end.
//
// Why it is the one to use when all buffers share one memory (logical GPUs on one card, CPU
// threads): it moves 2*N*S bytes for N buffers of S bytes, which is the least any all-reduce in
// one memory can move (each input byte must be read, each output byte written), so its time can
// reach T_min = 2*N*S/B. Reduce-to-one moves 5(N-1)S and a ring 5(N-1)S plus 2(N-1) barriers.
// On CUDA the whole step is ONE kernel launch that reads all N buffers (pointers in a small
// struct); see docs/allreduce-on-one-card.md. Across separate GPUs it would read every peer's
// memory over the links, where NCCL's rings and trees are the right tool instead.
//
// The observer sees one step, "reduce-broadcast", with, per slice r (rank r's work), the data
// flow: N*(N-1) transfers s -> d (kReduce) of slice r, one per ordered pair of ranks.
#pragma once

#include <cstddef>

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

class OneShotAllReduce final : public AllReduce {
 public:
  std::string name() const override { return std::string(kOneShotName); }
  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override;
  int num_steps(int n) const override { return n > 1 ? 1 : 0; }
  // 2*N*S: every buffer read once and written once.
  double bytes_moved(int n, std::size_t bytes) const override;
};

}  // namespace mirrorlab::vgpu
