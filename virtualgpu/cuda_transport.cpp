#include "virtualgpu/cuda_transport.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/collective_kernels.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/cuda_event.h"
#include "virtualgpu/device.h"
#include "virtualgpu/one_shot_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

// A pair of timing events around one piece of queued work, and what the work stands for.
struct TimedWork {
  CudaEvent start, stop;  // created on the calling thread's current GPU
  TimePoint queued{};
  std::vector<Transfer> transfers;  // for the observer
};

class CudaTransport final : public Transport {
 public:
  CudaTransport(const std::vector<Device*>& devices, std::vector<std::span<float>> buffers)
      : buffers_(std::move(buffers)) {
    for (const Device* d : devices) {
      ordinals_.push_back(d->cuda_ordinal());
      streams_.push_back(static_cast<cudaStream_t>(d->cuda_stream()));
    }
    const int n = static_cast<int>(ordinals_.size());
    peer_.assign(static_cast<std::size_t>(n * n), false);
    for (int dst = 0; dst < n; ++dst) {
      for (int src = 0; src < n; ++src) {
        if (ordinals_[dst] == ordinals_[src]) {
          peer_[dst * n + src] = true;  // one card: its memory is all one address space
        } else {
          peer_[dst * n + src] = enable_peer_access(ordinals_[dst], ordinals_[src]);
        }
      }
    }
  }

  void publish(int rank) override {
    CurrentGpuGuard gpu(ordinals_[rank]);
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(streams_[rank]));
  }

  void move(Transfer t) override {
    const int dst = t.dst, src = t.src;
    const std::size_t n = t.end - t.begin;
    CurrentGpuGuard gpu(ordinals_[dst]);
    const cudaStream_t stream = streams_[dst];
    TimedWork work;
    work.queued = Clock::now();
    float* to = buffers_[dst].data() + t.begin;
    const float* from = buffers_[src].data() + t.begin;
    work.start.record(stream);
    if (n > 0 && t.kind == TransferKind::kCopy) {
      if (ordinals_[dst] == ordinals_[src]) {
        MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(to, from, t.bytes, cudaMemcpyDeviceToDevice, stream));
      } else {
        MIRRORLAB_CUDA_CHECK(
            cudaMemcpyPeerAsync(to, ordinals_[dst], from, ordinals_[src], t.bytes, stream));
      }
    } else if (n > 0) {
      reduce_into(to, from, n, dst, src, stream);
    }
    work.stop.record(stream);
    work.transfers.push_back(t);
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(work));
  }

  void reduce_broadcast(int rank, std::size_t begin, std::size_t end) override {
    // Only noted here: settle() launches all ranks' slices as one kernel once every rank has
    // reached the barrier, i.e. once every buffer is published.
    std::lock_guard lock(mutex_);
    slices_.push_back({rank, begin, end});
  }

  std::vector<Transfer> settle() override {
    if (!slices_.empty()) launch_one_shot_slices();
    std::vector<Transfer> done;
    for (TimedWork& work : pending_) {
      const float ms = elapsed_ms(work.start, work.stop);  // waits for the work
      const auto elapsed = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(ms));
      for (Transfer t : work.transfers) {
        t.start = work.queued;
        t.finish = work.queued + elapsed;
        done.push_back(t);
      }
    }
    pending_.clear();
    return done;
  }

  void scale(int rank, float factor) override {
    CurrentGpuGuard gpu(ordinals_[rank]);
    launch_scale(buffers_[rank].data(), buffers_[rank].size(), factor, streams_[rank],
                 ordinals_[rank]);
    // The result must be complete when the all-reduce returns: the host may read it next.
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(streams_[rank]));
  }

 private:
  // Lets GPU `dst` read GPU `src`'s memory when the hardware allows; false when it cannot.
  static bool enable_peer_access(int dst, int src) {
    int can = 0;
    MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, dst, src));
    if (!can) return false;
    CurrentGpuGuard gpu(dst);
    const cudaError_t e = cudaDeviceEnablePeerAccess(src, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // clear it: it is not an error for us
    } else {
      MIRRORLAB_CUDA_CHECK(e);
    }
    return true;
  }

  // dst[0, n) += src[0, n), on `stream` of rank dst's GPU (current).
  void reduce_into(float* to, const float* from, std::size_t n, int dst, int src,
                   cudaStream_t stream) {
    const int n_ranks = static_cast<int>(ordinals_.size());
    if (peer_[dst * n_ranks + src]) {
      launch_add(to, from, n, stream, ordinals_[dst]);
      return;
    }
    // No peer access: stage the chunk on dst's GPU first (stream-ordered allocation, freed in
    // stream order after the kernel has read it).
    void* staging = nullptr;
    const std::size_t bytes = n * sizeof(float);
    MIRRORLAB_CUDA_CHECK(cudaMallocAsync(&staging, bytes, stream));
    MIRRORLAB_CUDA_CHECK(
        cudaMemcpyPeerAsync(staging, ordinals_[dst], from, ordinals_[src], bytes, stream));
    launch_add(to, static_cast<const float*>(staging), n, stream, ordinals_[dst]);
    MIRRORLAB_CUDA_CHECK(cudaFreeAsync(staging, stream));
  }

  // The one-shot: one kernel on rank 0's stream over the union of the slices the ranks noted.
  void launch_one_shot_slices() {
    const int n = static_cast<int>(buffers_.size());
    for (int r = 1; r < n; ++r) {
      if (!peer_[0 * n + r]) {
        slices_.clear();
        throw std::invalid_argument(
            "the " + std::string(kOneShotName) +
            " all-reduce reads every buffer from one kernel, but GPU " +
            std::to_string(ordinals_[0]) + " cannot reach GPU " + std::to_string(ordinals_[r]) +
            "'s memory (no peer access): use " + all_reduce_name_list("or", kOneShotName) +
            " across these GPUs");
      }
    }
    try {
      order_one_shot_slices(slices_);
    } catch (...) {
      slices_.clear();
      throw;
    }
    OneShotBuffers pointers;
    pointers.n = n;
    for (int r = 0; r < n && r < kMaxOneShotRanks; ++r) pointers.data[r] = buffers_[r].data();
    CurrentGpuGuard gpu(ordinals_[0]);
    TimedWork work;
    work.queued = Clock::now();
    work.start.record(streams_[0]);
    launch_one_shot(pointers, slices_.front().begin, slices_.back().end, streams_[0], ordinals_[0]);
    work.stop.record(streams_[0]);
    for (const OneShotSlice& s : slices_) {
      const std::vector<Transfer> made =
          reduce_broadcast_transfers(n, s.rank, s.begin, s.end, {}, {});
      work.transfers.insert(work.transfers.end(), made.begin(), made.end());
    }
    slices_.clear();
    pending_.push_back(std::move(work));
  }

  std::vector<std::span<float>> buffers_;
  std::vector<int> ordinals_;
  std::vector<cudaStream_t> streams_;
  std::vector<bool> peer_;  // peer_[dst * n + src]: a kernel on dst's GPU can read src's buffer
  std::mutex mutex_;
  std::vector<TimedWork> pending_;
  std::vector<OneShotSlice> slices_;
};

}  // namespace

std::unique_ptr<Transport> make_cuda_transport(const std::vector<Device*>& devices,
                                               std::vector<std::span<float>> buffers) {
  return std::make_unique<CudaTransport>(devices, std::move(buffers));
}

}  // namespace mirrorlab::vgpu
