#include "virtualgpu/collectives/transport.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

void HostTransport::record(Transfer t) {
  std::lock_guard lock(mutex_);
  pending_.push_back(t);
}

void HostTransport::move(Transfer t) {
  t.start = Clock::now();
  const float* from = buffers_[t.src].data();
  float* to = buffers_[t.dst].data();
  if (t.kind == TransferKind::kReduce) {
    for (std::size_t i = t.begin; i < t.end; ++i) to[i] += from[i];
  } else {
    std::copy(from + t.begin, from + t.end, to + t.begin);
  }
  t.finish = Clock::now();
  record(t);
}

void HostTransport::reduce_broadcast(int rank, std::size_t begin, std::size_t end) {
  const TimePoint start = Clock::now();
  // Tiles small enough to stay in L1: every buffer is read once and written once, which is the
  // least an all-reduce in one memory can do (2*N*S bytes in all); the tile loops vectorize.
  constexpr std::size_t kTile = 1024;
  float sum[kTile];
  for (std::size_t i = begin; i < end; i += kTile) {
    const std::size_t len = std::min(kTile, end - i);
    const float* first = buffers_[0].data() + i;
    std::copy(first, first + len, sum);
    for (std::size_t k = 1; k < buffers_.size(); ++k) {  // rank order: the same sum everywhere
      const float* b = buffers_[k].data() + i;
      for (std::size_t j = 0; j < len; ++j) sum[j] += b[j];
    }
    for (const std::span<float>& buffer : buffers_) std::copy(sum, sum + len, buffer.data() + i);
  }
  const std::vector<Transfer> made = reduce_broadcast_transfers(
      static_cast<int>(buffers_.size()), rank, begin, end, start, Clock::now());
  std::lock_guard lock(mutex_);
  pending_.insert(pending_.end(), made.begin(), made.end());
}

std::vector<Transfer> HostTransport::settle() {
  std::lock_guard lock(mutex_);
  return std::exchange(pending_, {});
}

void HostTransport::scale(int rank, float factor) {
  for (float& v : buffers_[rank]) v *= factor;
}

std::vector<Transfer> reduce_broadcast_transfers(int n, int rank, std::size_t begin,
                                                 std::size_t end, TimePoint start,
                                                 TimePoint finish) {
  // Where the values flow: slice `rank` of every buffer receives slice `rank` of every other
  // buffer (read before the step, as in every step), so every pair (s, d) is one kReduce.
  std::vector<Transfer> made;
  const std::size_t bytes = (end - begin) * sizeof(float);
  for (int dst = 0; dst < n; ++dst) {
    for (int src = 0; src < n; ++src) {
      if (src != dst) {
        made.push_back(Transfer{src, dst, begin, end, bytes, TransferKind::kReduce, start, finish});
      }
    }
  }
  (void)rank;  // the slice says whose work it is: rank r takes slice r
  return made;
}

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

}  // namespace mirrorlab::vgpu
