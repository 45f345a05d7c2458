// The one-shot all-reduce as ONE kernel: every thread takes elements (four at a time, float4)
// in a grid-stride loop, loads them from all N buffers, sums them in rank order and stores the
// sum into all N. Each byte of each buffer is read once and written once: 2*N*S bytes for the
// whole all-reduce, the least possible when the N buffers share one memory, so the kernel runs
// at the card's copy bandwidth (see docs/allreduce-on-one-card.md). The N loads of an iteration
// are independent, so with N known at compile time (2..8) they are all in flight at once.
#include <array>
#include <utility>

#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/collective_kernels.cuh"
#include "virtualgpu/collective_kernels.h"
#include "virtualgpu/cuda/cuda_check.h"

namespace mirrorlab::vgpu {
namespace {

// kRanks > 0: the rank count at compile time (loops unrolled); 0: b.n at run time.
template <int kRanks>
__global__ void one_shot_kernel(OneShotBuffers b, std::size_t begin, std::size_t n, int vectorize) {
  const int ranks = kRanks > 0 ? kRanks : b.n;
  const std::size_t tid = global_thread();
  const std::size_t stride = grid_threads();
  const auto scalar = [&](std::size_t i) {
    float sum = b.data[0][begin + i];
#pragma unroll
    for (int k = 1; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
      if (k < ranks) sum += b.data[k][begin + i];
    }
#pragma unroll
    for (int k = 0; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
      if (k < ranks) b.data[k][begin + i] = sum;
    }
  };
  if (!vectorize) {
    for (std::size_t i = tid; i < n; i += stride) scalar(i);
    return;
  }
  const std::size_t head = head_elements(b.data[0] + begin, n);
  const std::size_t body = (n - head) / 4;
  const std::size_t tail = head + body * 4;
  if (tid < head) scalar(tid);
  if (tid < n - tail) scalar(tail + tid);
  const std::size_t first = begin + head;  // float4 aligned in every buffer
  for (std::size_t i = tid; i < body; i += stride) {
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
void launch(const OneShotBuffers& b, std::size_t begin, std::size_t n, bool vectorize,
            cudaStream_t stream, int ordinal) {
  const auto kernel = one_shot_kernel<kRanks>;
  const int blocks = grid_size(reinterpret_cast<const void*>(kernel), kCollectiveThreads,
                               vectorize ? n / 4 + 1 : n, ordinal);
  kernel<<<blocks, kCollectiveThreads, 0, stream>>>(b, begin, n, vectorize ? 1 : 0);
  MIRRORLAB_CUDA_CHECK(cudaGetLastError());
}

using Launcher = void (*)(const OneShotBuffers&, std::size_t, std::size_t, bool, cudaStream_t, int);

template <int... kRanks>
constexpr std::array<Launcher, sizeof...(kRanks)> launchers(std::integer_sequence<int, kRanks...>) {
  return {launch<kRanks>...};
}

// Rank counts up to 8 (one card carved into at most 8 logical GPUs, the usual case) have their
// own unrolled kernel, entry N; entry 0 reads the count at run time for more.
constexpr int kUnrolledRanks = 8;
constexpr auto kLaunchers = launchers(std::make_integer_sequence<int, kUnrolledRanks + 1>{});

Launcher launcher(int ranks) { return kLaunchers[ranks <= kUnrolledRanks ? ranks : 0]; }

}  // namespace

void launch_one_shot(const OneShotBuffers& b, std::size_t begin, std::size_t end,
                     cudaStream_t stream, int ordinal) {
  if (end <= begin || b.n < 1) return;
  if (b.n > kMaxOneShotRanks) {
    throw std::invalid_argument("the " + std::string(kOneShotName) + " kernel takes at most " +
                                std::to_string(kMaxOneShotRanks) + " buffers, not " +
                                std::to_string(b.n));
  }
  const std::size_t n = end - begin;
  const float* starts[kMaxOneShotRanks];
  for (int k = 0; k < b.n; ++k) starts[k] = b.data[k] + begin;
  const bool vectorize = same_alignment(starts, b.n);
  launcher(b.n)(b, begin, n, vectorize, stream, ordinal);
}

}  // namespace mirrorlab::vgpu
