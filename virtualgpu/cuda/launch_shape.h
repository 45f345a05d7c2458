// Launch configurations of every CUDA kernel of the project, as plain functions (no CUDA), so
// they are tested on any machine at their edges (tests/core/nn/test_launch_shape.cpp): no elements,
// fewer than a warp, more than one grid, counts past 2^31. The launchers
// (core/nn/cuda/kernels_cuda_*.cu, virtualgpu/devices/collective_kernels.cu,
// one_shot_all_reduce.cu) take their grid, block and shared memory from here; what is left to a GPU
// is that the hardware runs what they ask for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "virtualgpu/cuda/host_device.h"

namespace mirrorlab::vgpu {

inline constexpr unsigned kWarpThreads = 32;

// What one launch asks for. blocks == 0: nothing to launch (the launcher returns at once).
struct LaunchShape {
  unsigned blocks = 0;
  unsigned threads = 0;
  std::size_t shared_bytes = 0;  // dynamic shared memory (static shared memory is in the kernel)
  bool empty() const { return blocks == 0; }
};

// ---- element-wise kernels of the layers (grid-stride loops) -------------------------------------
inline constexpr unsigned kElementwiseThreads = 256;
// At most this many blocks: a larger n is covered by the grid-stride loop, each thread taking
// several elements (8 blocks per SM on a 132-SM card is ~1000; this is far more, and far below
// CUDA's limit of 2^31 - 1 blocks in x).
inline constexpr unsigned kMaxElementwiseBlocks = 65535u * 16;

inline LaunchShape elementwise_shape(std::size_t n) {
  if (n == 0) return {};
  const std::size_t needed = n / kElementwiseThreads + (n % kElementwiseThreads != 0);
  return {static_cast<unsigned>(needed < kMaxElementwiseBlocks ? needed : kMaxElementwiseBlocks),
          kElementwiseThreads, 0};
}

// One thread per row, no grid-stride loop (the loss's rows: a batch, an int).
inline LaunchShape one_thread_per_row_shape(int rows) {
  if (rows <= 0) return {};
  const auto n = static_cast<std::size_t>(rows);
  return {static_cast<unsigned>(n / kElementwiseThreads + (n % kElementwiseThreads != 0)),
          kElementwiseThreads, 0};
}

// One block of `threads` (a reduction in shared memory: the loss's sum over rows).
inline LaunchShape single_block_shape(unsigned threads) { return {1, threads, 0}; }

// How many elements thread `tid` of a grid of `stride` threads takes in a grid-stride loop over
// n elements (i = tid, tid + stride, ...): with every thread's count, the loop covers each index
// exactly once.
MIRRORLAB_HD inline std::size_t grid_stride_visits(std::size_t tid, std::size_t stride,
                                                   std::size_t n) {
  return tid < n ? (n - tid - 1) / stride + 1 : 0;
}

// ---- the collectives' kernels (add, scale, copy, the one-shot) ----------------------------------
inline constexpr unsigned kCollectiveThreads = 256;

// Blocks that fill every SM of a card at a kernel's occupancy: at least 1.
inline unsigned full_grid(int sm_count, int blocks_per_sm) {
  const long long full =
      static_cast<long long>(sm_count > 0 ? sm_count : 0) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
  return full < 1 ? 1u : full > 0x7fffffffLL ? 0x7fffffffu : static_cast<unsigned>(full);
}

// A grid-stride kernel over `work` items: enough blocks to fill the card (`full`, from
// full_grid), and no more than the work needs; at least 1 (callers return before launching for
// no elements).
inline LaunchShape collective_shape(std::size_t work, unsigned full) {
  const std::size_t needed = work / kCollectiveThreads + (work % kCollectiveThreads != 0);
  std::size_t blocks = needed < full ? needed : full;
  if (blocks < 1) blocks = 1;
  return {static_cast<unsigned>(blocks), kCollectiveThreads, 0};
}

// The float4 path: a scalar head up to the first 16-byte boundary, `body` float4s, then a scalar
// tail. `misaligned_floats`: how many floats the first element lies past a 16-byte boundary
// (0..3; the buffers hold floats, so always a whole number).
struct VectorSplit {
  std::size_t head = 0;  // scalars [0, head)
  std::size_t body = 0;  // float4s over [head, head + 4*body)
  std::size_t tail = 0;  // scalars [head + 4*body, n)
};
// The kernels call it too (on the device).
MIRRORLAB_HD inline VectorSplit vector_split(std::size_t misaligned_floats, std::size_t n) {
  const std::size_t want = misaligned_floats % 4 == 0 ? 0 : 4 - misaligned_floats % 4;
  VectorSplit s;
  s.head = want < n ? want : n;
  s.body = (n - s.head) / 4;
  s.tail = n - s.head - 4 * s.body;
  return s;
}
MIRRORLAB_HD inline VectorSplit vector_split(const float* first, std::size_t n) {
  return vector_split((reinterpret_cast<std::uintptr_t>(first) & 15u) / 4, n);
}
// The items a collective kernel's grid is sized for: float4s (plus one thread for the head and
// tail) on the vector path, elements otherwise.
inline std::size_t collective_work(std::size_t n, bool vectorize) {
  return vectorize ? n / 4 + 1 : n;
}

// ---- the one-shot's kernel ----------------------------------------------------------------------
// The most ranks it takes: their pointers travel in the kernel's parameters (OneShotBuffers),
// 520 bytes, within the 4 KiB every CUDA version allows.
inline constexpr int kMaxOneShotRanks = 64;

// The one-shot kernel's rank table: one buffer per rank, in its parameters.
struct OneShotBuffers {
  float* data[kMaxOneShotRanks] = {};
  int n = 0;
};
// Rank counts up to this have their own kernel with the loops over the ranks unrolled (one card
// carved into at most 8 logical GPUs is the usual case).
inline constexpr int kUnrolledOneShotRanks = 8;
// Which entry of the table of one-shot kernels runs `ranks` ranks: the unrolled kernel of that
// count, or entry 0, which reads the count at run time. -1: no kernel can (fewer than 1, or more
// than kMaxOneShotRanks: the launcher refuses, saying so).
inline int one_shot_table_entry(int ranks) {
  if (ranks < 1 || ranks > kMaxOneShotRanks) return -1;
  return ranks <= kUnrolledOneShotRanks ? ranks : 0;
}

}  // namespace mirrorlab::vgpu
