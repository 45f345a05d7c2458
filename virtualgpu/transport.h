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

#include "virtualgpu/collective.h"

namespace mirrorlab::vgpu {

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
  // observer, N-1 reads (s -> rank, kReduce) and N-1 writes (rank -> d, kCopy) of that slice.
  virtual void reduce_broadcast(int rank, std::size_t begin, std::size_t end) = 0;
  // Once per step, while every rank waits at the barrier: completes the step's work (waits for
  // the device) and returns its transfers with their times.
  virtual std::vector<Transfer> settle() = 0;
  // Multiplies rank `rank`'s buffer by `factor` (kMean); the result is complete on return.
  virtual void scale(int rank, float factor) = 0;
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

// The transfers the one-shot's fused slice [begin, end) of rank `rank` stands for (see
// Transport::reduce_broadcast), all with the times `start` and `finish`.
std::vector<Transfer> reduce_broadcast_transfers(int n, int rank, std::size_t begin,
                                                 std::size_t end, TimePoint start,
                                                 TimePoint finish);

// The transport for buffers held by `devices` (devices[i] holds rank i's buffer): host memory
// for every device, or CUDA memory for every device. No devices: host memory (buffers the
// caller vouches are host memory, as in tests). Throws std::invalid_argument for a mix, or for
// CUDA devices in a build without CUDA.
std::unique_ptr<Transport> make_transport(const std::vector<Device*>& devices,
                                          std::vector<std::span<float>> buffers);

}  // namespace mirrorlab::vgpu
