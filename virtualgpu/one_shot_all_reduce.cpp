#include "virtualgpu/one_shot_all_reduce.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace mirrorlab::vgpu {

void order_one_shot_slices(std::vector<OneShotSlice>& slices) {
  // By begin, then end: an empty slice shares its begin with the next one and must go first.
  std::sort(slices.begin(), slices.end(), [](const OneShotSlice& a, const OneShotSlice& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  for (std::size_t i = 1; i < slices.size(); ++i) {
    if (slices[i].begin != slices[i - 1].end) {
      throw std::logic_error(std::string(kOneShotName) +
                             " slices must tile the buffer without gaps or overlaps");
    }
  }
}

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
