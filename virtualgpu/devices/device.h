// A device a replica runs on: a name, a capped memory arena and a stream (a worker thread with an
// in-order queue). A CPU-backed virtual GPU computes on that thread in host memory. A CUDA
// physical or logical GPU uses the same worker thread as its host-side driver: work queued there
// launches kernels on the device's own CUDA stream, into an arena of CUDA device memory.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "virtualgpu/devices/stream.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::vgpu {

class CudaApi;        // virtualgpu/cuda/cuda_api.h
class CudaEventPool;  // virtualgpu/cuda/cuda_event_pool.h

enum class DeviceKind { kCpuVirtualGpu, kCudaPhysicalGpu, kCudaLogicalGpu };

const char* to_string(DeviceKind kind);  // "CPU-backed virtual GPU", ...

class Device {
 public:
  // A CPU-backed virtual GPU (host memory).
  Device(int index, DeviceKind kind, std::size_t memory_limit_bytes);
  // A device whose arena takes its blocks from `allocator`; for CUDA devices, `cuda_ordinal` is
  // the physical GPU, `cuda_stream` its cudaStream_t (owned by whoever made the device) and
  // `cuda_api` what reaches CUDA (the process's, or a test's fake; outlives the device).
  Device(int index, DeviceKind kind, std::size_t memory_limit_bytes,
         std::unique_ptr<BlockAllocator> allocator, int cuda_ordinal, void* cuda_stream,
         CudaApi* cuda_api);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int index() const { return index_; }
  const std::string& name() const { return name_; }  // TensorFlow's style: "/gpu:0"
  DeviceKind kind() const { return kind_; }
  MemoryArena& memory() { return memory_; }
  const MemoryArena& memory() const { return memory_; }
  Stream& stream() { return stream_; }
  // The physical CUDA GPU this device runs on, or -1 for a CPU-backed virtual GPU.
  int cuda_ordinal() const { return cuda_ordinal_; }
  bool is_cuda() const { return cuda_ordinal_ >= 0; }
  // Its CUDA stream (a cudaStream_t, kept as void* so this header needs no CUDA), or nullptr.
  void* cuda_stream() const { return cuda_stream_; }
  // A second CUDA stream on its GPU, for collectives that run beside the compute queued on
  // cuda_stream() (as NCCL's kernels run on a stream of their own in TensorFlow): made on the
  // first call (any thread), owned by the device; nullptr for a CPU-backed virtual GPU. A plain
  // stream of the GPU, outside an SM split: the collective's kernels may use every SM.
  void* communication_cuda_stream();
  // What its CUDA work goes through, or nullptr for a CPU-backed virtual GPU.
  CudaApi* cuda_api() const { return cuda_api_; }
  // Events of its GPU to use again (the collectives' marks), or nullptr for a CPU-backed one.
  CudaEventPool* cuda_events() const { return cuda_events_.get(); }

 private:
  int index_;
  std::string name_;
  DeviceKind kind_;
  int cuda_ordinal_ = -1;
  void* cuda_stream_ = nullptr;
  CudaApi* cuda_api_ = nullptr;
  std::unique_ptr<CudaEventPool> cuda_events_;  // destroyed after the stream's thread stopped
  // The communication stream, destroyed after the thread stopped.
  struct OwnedCudaStream {
    CudaApi* api = nullptr;
    int ordinal = -1;
    void* stream = nullptr;
    ~OwnedCudaStream();
  };
  std::mutex communication_mutex_;
  OwnedCudaStream communication_;
  MemoryArena memory_;
  Stream stream_;  // last: its thread starts once the rest is built, stops first
};

}  // namespace mirrorlab::vgpu
