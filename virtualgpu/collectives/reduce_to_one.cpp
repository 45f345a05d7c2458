#include "virtualgpu/collectives/reduce_to_one.h"

#include <stdexcept>
#include <string>

namespace mirrorlab::vgpu {

void ReduceToOneDevice::run_rank(int rank, CollectiveGroup& group, ReduceOp op) const {
  const int n = group.size();
  if (destination_ >= n) {
    group.abort();
    throw std::invalid_argument(std::string(kReduceToOneName) +
                                " destination /gpu:" + std::to_string(destination_) +
                                " is not one of the " + std::to_string(n) + " devices");
  }
  group.begin(rank);
  if (n > 1) {
    const std::size_t count = group.count();
    // Step 0: the destination adds every other buffer into its own, in rank order, so the sum
    // is the same whatever the thread timing.
    if (rank == destination_) {
      for (int src = 0; src < n; ++src) {
        if (src != destination_) group.transfer(src, destination_, 0, count, TransferKind::kReduce);
      }
    }
    group.end_step(rank, 0, "reduce");
    // Step 1: every other rank copies the sum.
    if (rank != destination_) group.transfer(destination_, rank, 0, count, TransferKind::kCopy);
    group.end_step(rank, 1, "broadcast");
  }
  group.finish(rank, op);
}

double ReduceToOneDevice::bytes_moved(int n, std::size_t bytes) const {
  // reduce: n-1 additions into the destination, each reading two buffers and writing one;
  // broadcast: n-1 copies, each reading one buffer and writing one.
  const double s = static_cast<double>(bytes);
  return n > 1 ? (3.0 + 2.0) * (n - 1) * s : 0.0;
}

}  // namespace mirrorlab::vgpu
