#include "virtualgpu/collectives/one_shot_all_reduce.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace mirrorlab::vgpu {

void OneShotAllReduce::run_rank(int rank, CollectiveGroup& group, ReduceOp op) const {
  const int n = group.size();
  group.begin(rank);
  if (n > 1) {
    const std::size_t count = group.count();
    const auto r = static_cast<std::size_t>(rank);
    const auto parts = static_cast<std::size_t>(n);
    group.reduce_broadcast(rank, r * count / parts, (r + 1) * count / parts);
    group.end_step(rank, 0, "reduce-broadcast");
  }
  group.finish(rank, op);
}

double OneShotAllReduce::bytes_moved(int n, std::size_t bytes) const {
  return n > 1 ? 2.0 * n * static_cast<double>(bytes) : 0.0;
}

}  // namespace mirrorlab::vgpu
