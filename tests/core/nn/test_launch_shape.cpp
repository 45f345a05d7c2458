// Launch configurations (virtualgpu/cuda/launch_shape.h) at their edges: no elements, fewer than a
// warp, more than one grid, counts past 2^31. What a GPU adds is only that it runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/nn/kernel_elements_train.h"
#include "virtualgpu/cuda/launch_shape.h"
#include "virtualgpu/devices/collective_elements.h"

namespace mirrorlab::vgpu {
namespace {

constexpr std::size_t kPast2To31 = (std::size_t{1} << 31) + 7;
constexpr std::size_t kPast2To32 = (std::size_t{1} << 32) + 3;
constexpr std::size_t kHuge = std::size_t{1} << 40;
// CUDA's limit of blocks in x; and threads in a block.
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxBlockThreads = 1024;

// Every thread's share of a grid-stride loop adds up to n, and no thread is left with an index
// past n: checked thread by thread where the grid is small enough, and in closed form (the
// first n % stride threads take one more) for the rest.
void expect_covers(const LaunchShape& shape, std::size_t n) {
  const std::size_t stride = std::size_t{shape.blocks} * shape.threads;
  ASSERT_GT(stride, 0u);
  if (stride <= (std::size_t{1} << 22)) {
    std::size_t total = 0;
    for (std::size_t tid = 0; tid < stride; ++tid) total += grid_stride_visits(tid, stride, n);
    EXPECT_EQ(total, n) << "stride " << stride;
  }
  const std::size_t q = n / stride, r = n % stride;
  EXPECT_EQ(grid_stride_visits(0, stride, n), q + (r > 0 ? 1 : 0));
  EXPECT_EQ(grid_stride_visits(stride - 1, stride, n), q);  // r < stride: the last takes q
  // The last index any thread touches is below n: tid + (visits - 1) * stride < n.
  for (const std::size_t tid : {std::size_t{0}, stride / 2, stride - 1}) {
    const std::size_t visits = grid_stride_visits(tid, stride, n);
    if (visits > 0) {
      EXPECT_LT(tid + (visits - 1) * stride, n);
    }
    EXPECT_GE(tid + visits * stride, n) << "thread " << tid << " stops before the end";
  }
}

TEST(LaunchShape, ElementwiseAtItsEdges) {
  EXPECT_TRUE(elementwise_shape(0).empty());
  for (const std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{kWarpThreads - 1}}) {
    const LaunchShape s = elementwise_shape(n);  // fewer than a warp: one block
    EXPECT_EQ(s.blocks, 1u);
    EXPECT_EQ(s.threads, kElementwiseThreads);
    expect_covers(s, n);
  }
  EXPECT_EQ(elementwise_shape(256).blocks, 1u);
  EXPECT_EQ(elementwise_shape(257).blocks, 2u);
  // Exactly one full grid, then more than one: the block count stops at its cap and the
  // grid-stride loop takes the rest.
  const std::size_t one_grid = std::size_t{kMaxElementwiseBlocks} * kElementwiseThreads;
  EXPECT_EQ(elementwise_shape(one_grid).blocks, kMaxElementwiseBlocks);
  for (const std::size_t n : {one_grid + 1, kPast2To31, kPast2To32, kHuge}) {
    const LaunchShape s = elementwise_shape(n);
    EXPECT_EQ(s.blocks, kMaxElementwiseBlocks) << n;
    EXPECT_LE(s.blocks, kMaxGridX);
    EXPECT_LE(s.threads, kMaxBlockThreads);
    EXPECT_EQ(s.shared_bytes, 0u);
    expect_covers(s, n);
  }
}

TEST(LaunchShape, OneThreadPerRowCoversEveryRowUpToTheLargestInt) {
  EXPECT_TRUE(one_thread_per_row_shape(0).empty());
  EXPECT_TRUE(one_thread_per_row_shape(-5).empty());
  EXPECT_EQ(one_thread_per_row_shape(1).blocks, 1u);
  EXPECT_EQ(one_thread_per_row_shape(256).blocks, 1u);
  EXPECT_EQ(one_thread_per_row_shape(257).blocks, 2u);
  // (rows + 255) / 256 in int would overflow here; the shape must still cover every row.
  const int most = std::numeric_limits<int>::max();
  const LaunchShape s = one_thread_per_row_shape(most);
  EXPECT_GE(std::size_t{s.blocks} * s.threads, static_cast<std::size_t>(most));
  EXPECT_LT(std::size_t{s.blocks - 1} * s.threads, static_cast<std::size_t>(most));
  EXPECT_LE(s.blocks, kMaxGridX);
}

TEST(LaunchShape, TheLossSumIsOneBlockWithinSharedMemory) {
  const LaunchShape s = single_block_shape(core::elements::kLossSumThreads);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.threads, 256u);
  EXPECT_LE(s.threads, kMaxBlockThreads);
  // A power of two, or the tree (halving) would drop threads' sums.
  EXPECT_EQ(s.threads & (s.threads - 1), 0u);
  EXPECT_LE(sizeof(core::elements::LossSums) * s.threads, 48u * 1024);
}

TEST(LaunchShape, CollectiveGridFillsTheCardAndNoMore) {
  EXPECT_EQ(full_grid(132, 8), 1056u);
  EXPECT_EQ(full_grid(132, 0), 132u);  // occupancy 0 asked: one block per SM at least
  EXPECT_EQ(full_grid(0, 0), 1u);
  EXPECT_EQ(full_grid(1 << 20, 1 << 20), kMaxGridX);
  const unsigned full = full_grid(132, 8);
  EXPECT_EQ(collective_shape(0, full).blocks, 1u);  // the launcher returns before, but never 0
  EXPECT_EQ(collective_shape(1, full).blocks, 1u);
  EXPECT_EQ(collective_shape(31, full).blocks, 1u);
  EXPECT_EQ(collective_shape(257, full).blocks, 2u);
  for (const std::size_t work : {std::size_t{full} * kCollectiveThreads + 1, kPast2To31, kPast2To32,
                                 std::numeric_limits<std::size_t>::max()}) {
    const LaunchShape s = collective_shape(work, full);
    EXPECT_EQ(s.blocks, full) << work;
    EXPECT_EQ(s.threads, kCollectiveThreads);
    if (work < kHuge) expect_covers(s, work);
  }
}

// The float4 path: head, body and tail tile [0, n) for every alignment and small n, and the body
// starts on a 16-byte boundary.
TEST(LaunchShape, TheVectorSplitTilesEveryCountAtEveryAlignment) {
  alignas(16) float storage[64] = {};
  for (std::size_t misaligned = 0; misaligned < 4; ++misaligned) {
    for (std::size_t n = 0; n < 40; ++n) {
      const VectorSplit s = vector_split(storage + misaligned, n);
      EXPECT_EQ(s.head + 4 * s.body + s.tail, n) << misaligned << " " << n;
      EXPECT_LT(s.tail, 4u);
      EXPECT_LE(s.head, 3u);
      if (s.body > 0) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(storage + misaligned + s.head) % 16, 0u);
      }
      // Threads tid < head and tid < tail take them: one block has enough.
      EXPECT_LE(std::max(s.head, s.tail), std::size_t{kCollectiveThreads});
    }
  }
  const VectorSplit big = vector_split(std::size_t{1}, kPast2To32);
  EXPECT_EQ(big.head, 3u);
  EXPECT_EQ(big.head + 4 * big.body + big.tail, kPast2To32);
  EXPECT_EQ(collective_work(kPast2To32, false), kPast2To32);
  EXPECT_EQ(collective_work(kPast2To32, true), kPast2To32 / 4 + 1);
}

TEST(LaunchShape, TheOneShotsRankTable) {
  EXPECT_EQ(one_shot_table_entry(0), -1);
  EXPECT_EQ(one_shot_table_entry(-1), -1);
  for (int n = 1; n <= kUnrolledOneShotRanks; ++n) EXPECT_EQ(one_shot_table_entry(n), n);
  for (const int n : {kUnrolledOneShotRanks + 1, 33, kMaxOneShotRanks}) {
    EXPECT_EQ(one_shot_table_entry(n), 0) << n;
  }
  EXPECT_EQ(one_shot_table_entry(kMaxOneShotRanks + 1), -1);
  // The pointers travel in the kernel's parameters: 4 KiB is the limit on every CUDA version.
  EXPECT_LE(sizeof(OneShotBuffers), 4096u);
}

}  // namespace
}  // namespace mirrorlab::vgpu
