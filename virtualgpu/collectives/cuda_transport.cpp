// The CUDA transport (cuda_transport.h), written over the devices' CudaApi: the same code runs
// on a GPU and, in every build, against the tests' fake (tests/virtualgpu/test_cuda_paths.cpp).
#include "virtualgpu/collectives/cuda_transport.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "virtualgpu/collectives/all_reduce_names.h"
#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_event_pool.h"
#include "virtualgpu/cuda/gpu_inventory.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {
namespace {

// A pair of timing events around one piece of queued work, and what the work stands for.
struct TimedWork {
  explicit TimedWork(CudaEventPool& pool) : start(pool), stop(pool) {}
  PooledEvent start, stop;
  TimePoint queued{};
  std::vector<Transfer> transfers;  // for the observer
};

class CudaTransport final : public Transport {
 public:
  CudaTransport(CudaApi& api, const std::vector<Device*>& devices,
                std::vector<std::span<float>> buffers, bool timed, bool communication_streams)
      : api_(api), buffers_(std::move(buffers)), timed_(timed) {
    for (Device* d : devices) {
      ordinals_.push_back(d->cuda_ordinal());
      streams_.push_back(communication_streams ? d->communication_cuda_stream() : d->cuda_stream());
      pools_.push_back(d->cuda_events());
      ready_.emplace_back(*d->cuda_events());
    }
    const int n = static_cast<int>(ordinals_.size());
    readers_.assign(static_cast<std::size_t>(n), {});
    readers_before_.assign(static_cast<std::size_t>(n), {});
    waited_.assign(static_cast<std::size_t>(n * n), 0);
    guarded_.assign(static_cast<std::size_t>(n), 0);
    peer_.assign(static_cast<std::size_t>(n * n), false);
    for (int dst = 0; dst < n; ++dst) {
      for (int src = 0; src < n; ++src) {
        if (ordinals_[dst] == ordinals_[src]) {
          peer_[dst * n + src] = true;  // one card: its memory is all one address space
        } else {
          peer_[dst * n + src] = vgpu::enable_peer_access(api_, ordinals_[dst], ordinals_[src]);
        }
      }
    }
  }

  // The rank's gradients are queued: its ready event marks them for the readers.
  void publish(int rank) override {
    CurrentGpu gpu(api_, ordinals_[rank]);
    api_.record_event(ready(rank), streams_[rank]);
  }

  void move(Transfer t) override {
    const int dst = t.dst, src = t.src;
    const std::size_t n = t.end - t.begin;
    CurrentGpu gpu(api_, ordinals_[dst]);
    const GpuStream stream = streams_[dst];
    order_before_writing(dst, src);
    std::optional<TimedWork> work;
    if (timed_) {
      work.emplace(*pools_[dst]);
      work->queued = Clock::now();
      api_.record_event(work->start.get(), stream);
    }
    float* to = buffers_[dst].data() + t.begin;
    const float* from = buffers_[src].data() + t.begin;
    if (n > 0 && t.kind == TransferKind::kCopy) {
      if (ordinals_[dst] == ordinals_[src]) {
        api_.copy_async(to, from, t.bytes, CopyKind::kDeviceToDevice, stream);
      } else {
        api_.copy_peer_async(to, ordinals_[dst], from, ordinals_[src], t.bytes, stream);
      }
    } else if (n > 0) {
      reduce_into(to, from, n, dst, src, stream);
    }
    api_.record_event(ready(dst), stream);
    std::lock_guard lock(mutex_);
    readers_[static_cast<std::size_t>(src)].push_back(dst);
    if (work) {
      api_.record_event(work->stop.get(), stream);
      work->transfers.push_back(t);
      pending_.push_back(std::move(*work));
    } else {
      untimed_.push_back(t);
    }
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
    const TimePoint now = Clock::now();
    for (Transfer t : untimed_) {
      t.start = t.finish = now;  // no observer asked for times: none were taken
      done.push_back(t);
    }
    untimed_.clear();
    for (TimedWork& work : pending_) {
      api_.synchronize_event(work.stop.get());  // waits for the work
      const float ms = api_.elapsed_ms(work.start.get(), work.stop.get());
      const auto elapsed = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(ms));
      for (Transfer t : work.transfers) {
        t.start = work.queued;
        t.finish = work.queued + elapsed;
        done.push_back(t);
      }
    }
    pending_.clear();
    // The step's readers are what the next steps' writers wait for; a new step waits afresh.
    for (std::size_t r = 0; r < readers_.size(); ++r) {
      auto& before = readers_before_[r];
      before.insert(before.end(), readers_[r].begin(), readers_[r].end());
      readers_[r].clear();
    }
    std::fill(waited_.begin(), waited_.end(), 0);
    std::fill(guarded_.begin(), guarded_.end(), 0);
    return done;
  }

  void scale(int rank, float factor) override {
    CurrentGpu gpu(api_, ordinals_[rank]);
    wait_for_readers(rank);  // other ranks may still read the buffer the scale overwrites
    api_.launch_scale(buffers_[rank].data(), buffers_[rank].size(), factor, streams_[rank],
                      ordinals_[rank]);
    // The result must be complete when the all-reduce returns: the host may read it next.
    api_.synchronize_stream(streams_[rank]);
  }

  void wait_for_devices() override {
    for (std::size_t r = 0; r < streams_.size(); ++r) {
      CurrentGpu gpu(api_, ordinals_[r]);
      api_.synchronize_stream(streams_[r]);
    }
  }

 private:
  GpuEvent ready(int rank) const { return ready_[static_cast<std::size_t>(rank)].get(); }

  // Makes dst's stream wait for `rank`'s ready event, once a step.
  void wait_for(int dst, int rank) {
    const std::size_t at =
        static_cast<std::size_t>(dst * static_cast<int>(ordinals_.size()) + rank);
    if (rank == dst || waited_[at]) return;
    api_.wait_event(streams_[dst], ready(rank));
    waited_[at] = 1;
  }

  // Before dst's stream writes its buffer, reading src's: src's writes so far are done (its
  // ready event), and so are the reads of dst's buffer by other ranks in the steps before.
  void order_before_writing(int dst, int src) {
    // waited_ is dst's own row: only dst's thread touches it within a step.
    wait_for(dst, src);
    wait_for_readers(dst);
  }

  // Once a step: dst's stream waits for the ranks that read its buffer in the steps before.
  void wait_for_readers(int dst) {
    std::vector<int> readers;
    {
      std::lock_guard lock(mutex_);
      if (!guarded_[static_cast<std::size_t>(dst)]) {
        readers.swap(readers_before_[static_cast<std::size_t>(dst)]);
        guarded_[static_cast<std::size_t>(dst)] = 1;
      }
    }
    for (int r : readers) wait_for(dst, r);
  }

  // dst[0, n) += src[0, n), on `stream` of rank dst's GPU (current).
  void reduce_into(float* to, const float* from, std::size_t n, int dst, int src,
                   GpuStream stream) {
    const int n_ranks = static_cast<int>(ordinals_.size());
    if (peer_[dst * n_ranks + src]) {
      api_.launch_add(to, from, n, stream, ordinals_[dst]);
      return;
    }
    // No peer access: stage the chunk on dst's GPU first (stream-ordered allocation, freed in
    // stream order after the kernel has read it).
    const std::size_t bytes = n * sizeof(float);
    void* staging = api_.allocate_async(bytes, stream);
    api_.copy_peer_async(staging, ordinals_[dst], from, ordinals_[src], bytes, stream);
    api_.launch_add(to, static_cast<const float*>(staging), n, stream, ordinals_[dst]);
    api_.release_async(staging, stream);
  }

  // The one-shot: one kernel on rank 0's stream over the union of the slices the ranks noted,
  // after every rank's gradients; every other rank's stream waits for it.
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
    {
      CurrentGpu gpu(api_, ordinals_[0]);
      for (int r = 1; r < n; ++r) wait_for(0, r);
      std::optional<TimedWork> work;
      if (timed_) {
        work.emplace(*pools_[0]);
        work->queued = Clock::now();
        api_.record_event(work->start.get(), streams_[0]);
      }
      api_.launch_one_shot(pointers, slices_.front().begin, slices_.back().end, streams_[0],
                           ordinals_[0]);
      api_.record_event(ready(0), streams_[0]);
      std::vector<Transfer> made;
      for (const OneShotSlice& s : slices_) {
        const std::vector<Transfer> slice =
            reduce_broadcast_transfers(n, s.rank, s.begin, s.end, {}, {});
        made.insert(made.end(), slice.begin(), slice.end());
      }
      if (work) {
        api_.record_event(work->stop.get(), streams_[0]);
        work->transfers = std::move(made);
        pending_.push_back(std::move(*work));
      } else {
        untimed_.insert(untimed_.end(), made.begin(), made.end());
      }
    }
    slices_.clear();
    for (int r = 1; r < n; ++r) {  // the kernel wrote every buffer
      CurrentGpu gpu(api_, ordinals_[r]);
      api_.wait_event(streams_[r], ready(0));
    }
  }

  CudaApi& api_;
  std::vector<std::span<float>> buffers_;
  bool timed_;
  std::vector<int> ordinals_;
  std::vector<GpuStream> streams_;
  std::vector<CudaEventPool*> pools_;
  std::vector<PooledEvent> ready_;  // each rank's last queued work on its buffer
  std::vector<bool> peer_;  // peer_[dst * n + src]: a kernel on dst's GPU can read src's buffer
  std::mutex mutex_;
  std::vector<std::vector<int>> readers_;         // of each rank's buffer, this step
  std::vector<std::vector<int>> readers_before_;  // ... in the steps before, not yet waited for
  // Flags as char, not vector<bool>'s bits: ranks' threads write their own at once.
  std::vector<char> waited_;   // [dst * n + rank]: dst's stream waits for rank's event this step
  std::vector<char> guarded_;  // dst has waited for its readers this step
  std::vector<TimedWork> pending_;
  std::vector<Transfer> untimed_;
  std::vector<OneShotSlice> slices_;
};

}  // namespace

std::unique_ptr<Transport> make_cuda_transport(const std::vector<Device*>& devices,
                                               std::vector<std::span<float>> buffers, bool timed,
                                               bool communication_streams) {
  CudaApi* api = devices.empty() ? nullptr : devices.front()->cuda_api();
  for (const Device* d : devices) {
    if (d->cuda_api() != api || api == nullptr || d->cuda_events() == nullptr) {
      throw std::invalid_argument(
          "an all-reduce on CUDA devices needs devices made with one CUDA runtime");
    }
  }
  return std::make_unique<CudaTransport>(*api, devices, std::move(buffers), timed,
                                         communication_streams);
}

}  // namespace mirrorlab::vgpu
