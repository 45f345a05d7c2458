// The one thin interface between the CUDA runtime and our code: every call the devices' memory,
// streams, events and the collectives make goes through a CudaApi, with no CUDA type in sight.
//
//   - RuntimeCudaApi (cuda_api_runtime.cpp, CUDA builds): each method one CUDA runtime call,
//     checked (MIRRORLAB_CUDA_CHECK). The kernel launches are completed one layer up
//     (virtualgpu/devices/process_cuda_api.h), where the collectives' kernels are. This is the
//     layer only a GPU can check.
//   - FakeCudaApi (tests/support/cuda/fake_cuda_api.h): host memory, and a record of every call,
//   checked as
//     CUDA would check it (a stream used only between its creation and destruction and on its
//     own GPU, an event recorded before it is waited for or timed, every block freed once, on its
//     own GPU). The real code paths above it (the cudaMalloc allocator and arena accounting, the
//     CUDA transport, the one-shot, NCCL and its fallback) run against it on any machine.
//
// A CUDA device (virtualgpu/devices/device.h) carries the CudaApi it was made with, so what is
// built on it (its allocator, the transport of its collectives) uses that one.
#pragma once

#include <cstddef>
#include <string>

#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/cuda/launch_shape.h"

namespace mirrorlab::vgpu {

using GpuStream = void*;  // a cudaStream_t
using GpuEvent = void*;   // a cudaEvent_t
using GpuGraph = void*;   // a cudaGraphExec_t

enum class CopyKind { kDeviceToDevice, kHostToDevice, kDeviceToHost };

class CudaApi {
 public:
  virtual ~CudaApi() = default;

  // ---- GPUs -------------------------------------------------------------------------------------
  // The CUDA runtime's version and the driver's (13000 for 13.0); the driver's is 0 without one
  // (cudaRuntimeGetVersion, cudaDriverGetVersion). Never throw.
  virtual int runtime_version() = 0;
  virtual int driver_version() = 0;
  // How many GPUs this process sees (cudaGetDeviceCount); 0 when it sees none, with *why_none
  // saying why in CUDA's words (no driver, no device). Never throws.
  virtual int gpu_count(std::string* why_none) = 0;
  // GPU `ordinal` as cudaGetDeviceProperties gives it: its ordinal, name, total memory, SM count
  // and compute capability (free_bytes is left 0).
  virtual PhysicalGpu gpu_properties(int ordinal) = 0;
  // The current GPU's free memory now (cudaMemGetInfo).
  virtual std::size_t free_bytes() = 0;
  // The calling thread's current GPU, and making `ordinal` current (cudaGetDevice/SetDevice).
  virtual int current_gpu() = 0;
  virtual void set_current_gpu(int ordinal) = 0;
  // Whether GPU `ordinal` can reach `peer`'s memory directly (cudaDeviceCanAccessPeer).
  virtual bool can_access_peer(int ordinal, int peer) = 0;
  // Lets the current GPU reach `peer`'s memory; already enabled is not an error.
  virtual void enable_peer_access(int peer) = 0;
  virtual int sm_count(int ordinal) = 0;
  // `count` streams on GPU `ordinal`, each in a green context of its own with an equal share of
  // the SMs (cuda_green_context.h); an empty set, with *unavailable saying why, when the driver
  // or the GPU has none. Throws ConfigurationError when the SMs cannot be split `count` ways.
  virtual CudaExecutionSet make_green_executions(int ordinal, int count,
                                                 std::string* unavailable) = 0;

  // ---- memory -----------------------------------------------------------------------------------
  // A block of the current GPU's memory; nullptr when the card has no room (other failures throw).
  virtual void* allocate(std::size_t bytes) = 0;
  // Gives a block back to GPU `ordinal`, which it came from (made current for the call, the
  // caller's put back after). Never throws: a failure is reported on stderr.
  virtual void release(void* block, int ordinal) noexcept = 0;
  // Stream-ordered: a block for work queued on `stream` (cudaMallocAsync / cudaFreeAsync).
  virtual void* allocate_async(std::size_t bytes, GpuStream stream) = 0;
  virtual void release_async(void* block, GpuStream stream) = 0;
  virtual void fill_bytes_async(void* dst, int value, std::size_t bytes, GpuStream stream) = 0;
  // Page-locked host memory (cudaMallocHost / cudaFreeHost): a copy from the GPU into it is truly
  // asynchronous, so the host goes on queueing work. Release never throws.
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  virtual void release_pinned(void* block) noexcept = 0;
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                          GpuStream stream) = 0;
  virtual void copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu,
                               std::size_t bytes, GpuStream stream) = 0;

  // ---- streams and events -----------------------------------------------------------------------
  // A non-blocking stream on the current GPU (it does not wait for the legacy default stream).
  virtual GpuStream create_stream() = 0;
  virtual void destroy_stream(GpuStream stream) noexcept = 0;
  // Waits until everything queued on `stream` has run.
  virtual void synchronize_stream(GpuStream stream) = 0;
  // A timing event on the current GPU.
  virtual GpuEvent create_event() = 0;
  virtual void destroy_event(GpuEvent event) noexcept = 0;
  // Marks the point of `stream` reached so far (the event and the stream: one GPU).
  virtual void record_event(GpuEvent event, GpuStream stream) = 0;
  // Work queued on `stream` after this waits until `event`'s recorded point is reached
  // (cudaStreamWaitEvent; the event recorded first).
  virtual void wait_event(GpuStream stream, GpuEvent event) = 0;
  // Waits until the recorded point is reached.
  virtual void synchronize_event(GpuEvent event) = 0;
  // Milliseconds between two recorded events (both reached).
  virtual float elapsed_ms(GpuEvent start, GpuEvent end) = 0;

  // ---- graphs: a stretch of one stream's work recorded once and launched again ----------------
  // From here to end_capture, what is queued on `stream` is recorded, not run
  // (cudaStreamBeginCapture, thread-local mode: meanwhile this thread may not wait for the GPU,
  // allocate or free). Events recorded on it meanwhile are recorded again by each launch.
  virtual void begin_capture(GpuStream stream) = 0;
  // Ends the recording and makes it a graph ready to launch (cudaStreamEndCapture, then
  // cudaGraphInstantiate). Nothing of it has run yet.
  virtual GpuGraph end_capture(GpuStream stream) = 0;
  // Queues the whole recorded work on `stream` as one launch (cudaGraphLaunch): the same
  // kernels, copies and events on the same memory, with the arguments they were recorded with.
  virtual void launch_graph(GpuGraph graph, GpuStream stream) = 0;
  virtual void destroy_graph(GpuGraph graph) noexcept = 0;

  // ---- the collectives' kernels (collective_kernels.h), on `stream` of the current GPU --------
  virtual void launch_add(float* dst, const float* src, std::size_t n, GpuStream stream,
                          int ordinal) = 0;
  virtual void launch_copy(float* dst, const float* src, std::size_t n, GpuStream stream,
                           int ordinal) = 0;
  virtual void launch_scale(float* x, std::size_t n, float factor, GpuStream stream,
                            int ordinal) = 0;
  virtual void launch_one_shot(const OneShotBuffers& buffers, std::size_t begin, std::size_t end,
                               GpuStream stream, int ordinal) = 0;
};

// Makes `ordinal` the calling thread's current GPU for a scope and puts the caller's back after:
// code that may run on any thread must not move it to another GPU.
class CurrentGpu {
 public:
  CurrentGpu(CudaApi& api, int ordinal) : api_(api), previous_(api.current_gpu()) {
    if (previous_ != ordinal) {
      api_.set_current_gpu(ordinal);
      changed_ = true;
    }
  }
  ~CurrentGpu() {
    if (changed_) {
      try {
        api_.set_current_gpu(previous_);  // valid a moment ago
      } catch (...) {
      }
    }
  }
  CurrentGpu(const CurrentGpu&) = delete;
  CurrentGpu& operator=(const CurrentGpu&) = delete;

 private:
  CudaApi& api_;
  int previous_;
  bool changed_ = false;
};

// One timing event, owned (destroyed with it). Move-only.
class ApiEvent {
 public:
  explicit ApiEvent(CudaApi& api) : api_(&api), event_(api.create_event()) {}
  ~ApiEvent() {
    if (event_ != nullptr) api_->destroy_event(event_);
  }
  ApiEvent(ApiEvent&& other) noexcept : api_(other.api_), event_(other.event_) {
    other.event_ = nullptr;
  }
  ApiEvent& operator=(ApiEvent&&) = delete;
  ApiEvent(const ApiEvent&) = delete;
  ApiEvent& operator=(const ApiEvent&) = delete;
  GpuEvent get() const { return event_; }

 private:
  CudaApi* api_;
  GpuEvent event_;
};

}  // namespace mirrorlab::vgpu
