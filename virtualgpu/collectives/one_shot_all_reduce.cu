// The one-shot all-reduce as ONE kernel: every thread takes elements (four at a time, float4)
// in a grid-stride loop, loads them from all N buffers, sums them in rank order and stores the
// sum into all N. Each byte of each buffer is read once and written once: 2*N*S bytes for the
// whole all-reduce, the least possible when the N buffers share one memory, so the kernel runs
// at the card's copy bandwidth (see docs/allreduce-on-one-card.md). The N loads of an iteration
// are independent, so with N known at compile time (2..8) they are all in flight at once.
// The work per element (scalar path) is one_shot_at (collective_elements.h); the float4 path
// adds lane by lane in the same rank order. Which kernel runs N ranks: one_shot_table_entry.
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/devices/collective_kernels.cuh"
#include "virtualgpu/devices/collective_kernels.h"

namespace mirrorlab::vgpu {
namespace {

// kRanks > 0: the rank count at compile time (loops unrolled); 0: b.n at run time. `b` holds
// the buffers from `begin` on (n elements each).
template <int kRanks>
__global__ void one_shot_kernel(OneShotBuffers b, std::size_t n, int vectorize) {
  const int ranks = kRanks > 0 ? kRanks : b.n;
  const std::size_t tid = global_thread();
  const std::size_t stride = grid_threads();
  if (!vectorize) {
    for (std::size_t i = tid; i < n; i += stride) one_shot_at<kRanks>(b, i);
    return;
  }
  const VectorSplit split = vector_split(b.data[0], n);
  const std::size_t tail = split.head + split.body * 4;
  if (tid < split.head) one_shot_at<kRanks>(b, tid);
  if (tid < split.tail) one_shot_at<kRanks>(b, tail + tid);
  const std::size_t first = split.head;  // float4 aligned in every buffer
  for (std::size_t i = tid; i < split.body; i += stride) {
    float4 sum = reinterpret_cast<const float4*>(b.data[0] + first)[i];
#pragma unroll
    for (int k = 1; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
      if (k < ranks) sum = sum + reinterpret_cast<const float4*>(b.data[k] + first)[i];
    }
#pragma unroll
    for (int k = 0; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
      if (k < ranks) reinterpret_cast<float4*>(b.data[k] + first)[i] = sum;
    }
  }
}

template <int kRanks>
void launch(const OneShotBuffers& b, std::size_t n, bool vectorize, cudaStream_t stream,
            int ordinal) {
  const auto kernel = one_shot_kernel<kRanks>;
  const int blocks =
      grid_size(reinterpret_cast<const void*>(kernel), collective_work(n, vectorize), ordinal);
  kernel<<<blocks, kCollectiveThreads, 0, stream>>>(b, n, vectorize ? 1 : 0);
  MIRRORLAB_CUDA_CHECK(cudaGetLastError());
}

using Launcher = void (*)(const OneShotBuffers&, std::size_t, bool, cudaStream_t, int);

template <int... kRanks>
constexpr std::array<Launcher, sizeof...(kRanks)> launchers(std::integer_sequence<int, kRanks...>) {
  return {launch<kRanks>...};
}

// Entry N: the unrolled kernel of N ranks; entry 0 reads the count at run time.
constexpr auto kLaunchers = launchers(std::make_integer_sequence<int, kUnrolledOneShotRanks + 1>{});

}  // namespace

void launch_one_shot(const OneShotBuffers& b, std::size_t begin, std::size_t end,
                     cudaStream_t stream, int ordinal) {
  if (end <= begin || b.n < 1) return;
  const int entry = one_shot_table_entry(b.n);
  if (entry < 0) {
    throw std::invalid_argument("the " + std::string(kOneShotName) + " kernel takes at most " +
                                std::to_string(kMaxOneShotRanks) + " buffers, not " +
                                std::to_string(b.n));
  }
  // The kernel sees the buffers from `begin` on.
  OneShotBuffers from_begin;
  from_begin.n = b.n;
  for (int k = 0; k < b.n; ++k) from_begin.data[k] = b.data[k] + begin;
  const bool vectorize = same_alignment(from_begin.data, b.n);
  kLaunchers[static_cast<std::size_t>(entry)](from_begin, end - begin, vectorize, stream, ordinal);
}

}  // namespace mirrorlab::vgpu
