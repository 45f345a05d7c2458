#include "virtualgpu/collectives/ring_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

void RingAllReduce::run_rank(int rank, CollectiveGroup& group, ReduceOp op) const {
  const int n = group.size();
  const int left = mod(rank - 1, n);
  group.begin(rank);
  // Receiver-driven: in every step rank r pulls one chunk from its left neighbour. Every rank
  // touches a different chunk of its own buffer and reads a chunk its neighbour does not write
  // in this step, so the steps need no locks, only the barrier between them.
  int step = 0;
  for (int s = 0; s < n - 1; ++s, ++step) {
    const auto [begin, end] =
        group.part_of_whole(static_cast<std::size_t>(mod(rank - 1 - s, n)), n);
    group.transfer(left, rank, begin, end, TransferKind::kReduce);
    group.end_step(rank, step, "reduce-scatter");
  }
  for (int s = 0; s < n - 1; ++s, ++step) {
    const auto [begin, end] = group.part_of_whole(static_cast<std::size_t>(mod(rank - s, n)), n);
    group.transfer(left, rank, begin, end, TransferKind::kCopy);
    group.end_step(rank, step, "all-gather");
  }
  group.finish(rank, op);
}

double RingAllReduce::bytes_moved(int n, std::size_t bytes) const {
  // Per step every rank moves one chunk of bytes/n: a reduce reads two chunks and writes one,
  // a copy reads one and writes one. n-1 steps of each, n ranks.
  const double s = static_cast<double>(bytes);
  return n > 1 ? (3.0 + 2.0) * (n - 1) * s : 0.0;
}

}  // namespace mirrorlab::vgpu
