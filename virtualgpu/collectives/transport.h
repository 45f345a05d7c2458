// How a collective group moves data between its ranks' buffers: the transport, chosen by the
// memory the buffers live in. The algorithms (ring, reduce-to-one, one-shot) say *what* moves
// where; the transport does it:
//   - HostTransport (host memory: CPU-backed virtual GPUs): plain loops on the calling rank's
//     thread, timed with the host clock, done when the call returns;
//   - CudaTransport (CUDA device memory; cuda_transport.h): device copies and a sum kernel
//     queued on the destination rank's CUDA stream, timed with CUDA events, and waited for
//     once per step, before the step's barrier releases anyone.
// One transport per CollectiveGroup (one all-reduce call). Every method is called on a rank's
// own thread, except settle(), which runs once per step with every rank parked at the barrier.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "virtualgpu/collectives/transfer.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::vgpu {

// One rank's slice [begin, end) of a one-shot all-reduce, as a transport collects them before
// running all of them at once (the CUDA transport's single kernel).
struct OneShotSlice {
  int rank = 0;
  std::size_t begin = 0, end = 0;
};

// Puts the slices, noted in whatever order the ranks arrived, in buffer order, so that they
// tile one range [front().begin, back().end). Empty slices are fine and come first among those
// starting where they do (1 element on 2 ranks: [0,0) then [0,1)). Throws std::logic_error
// when the slices leave a gap or overlap.
void order_one_shot_slices(std::vector<OneShotSlice>& slices);

class Transport {
 public:
  virtual ~Transport() = default;

  // Rank `rank` is about to meet the others: whatever it queued on its buffer before (its
  // gradients, on a CUDA stream) must be complete, because other ranks may read it next.
  virtual void publish(int rank) = 0;
  // Performs t.kind from t.src's buffer into t.dst's buffer over [t.begin, t.end), as work of
  // rank t.dst (the caller), and records it for settle().
  virtual void move(Transfer t) = 0;
  // The one-shot's fused operation for the calling rank `rank`: the sum over every buffer of
  // the elements [begin, end), in rank order, written into every buffer. Records, for the
  // observer, where the values flow: N*(N-1) transfers s -> d (kReduce) of that slice.
  virtual void reduce_broadcast(int rank, std::size_t begin, std::size_t end) = 0;
  // Once per step, while every rank waits at the barrier: completes the step's work (waits for
  // the device) and returns its transfers with their times.
  virtual std::vector<Transfer> settle() = 0;
  // Multiplies rank `rank`'s buffer by `factor` (kMean); the result is complete on return.
  virtual void scale(int rank, float factor) = 0;
  // Waits on the host until every rank's queued work is done (CUDA: every stream), for code
  // that reads or writes the buffers from the host, or reuses them after the group.
  virtual void wait_for_devices() {}
};

// Plain loops over host memory, on the calling thread.
class HostTransport final : public Transport {
 public:
  explicit HostTransport(std::vector<std::span<float>> buffers) : buffers_(std::move(buffers)) {}
  void publish(int /*rank*/) override {}  // host writes are visible once the barrier is passed
  void move(Transfer t) override;
  void reduce_broadcast(int rank, std::size_t begin, std::size_t end) override;
  std::vector<Transfer> settle() override;
  void scale(int rank, float factor) override;

 private:
  void record(Transfer t);
  std::vector<std::span<float>> buffers_;
  std::mutex mutex_;
  std::vector<Transfer> pending_;
};

// The transfers the one-shot's fused slice [begin, end) of rank `rank` stands for: for every
// destination d, a kReduce from every other rank s (as every step's transfers, they read what
// the source held before the step, so replay_contributions gives every rank every share). All
// with the times `start` and `finish`. They describe the data flow, not the memory traffic,
// which is one read and one write of each byte (OneShotAllReduce::bytes_moved).
std::vector<Transfer> reduce_broadcast_transfers(int n, int rank, std::size_t begin,
                                                 std::size_t end, TimePoint start,
                                                 TimePoint finish);

}  // namespace mirrorlab::vgpu
