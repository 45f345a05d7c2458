// A CudaApi that counts what passes through it (gpu_work_counts.h) and hands every call on to
// another: the process's runtime is wrapped in one (process_cuda_api()), and a test wraps its
// fake the same way to pin what a step asks of the GPU.
#pragma once

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/gpu_work_counts.h"

namespace mirrorlab::vgpu {

class CountingCudaApi final : public CudaApi {
 public:
  // Both outlive this.
  CountingCudaApi(CudaApi& inner, GpuWorkCounts& counts) : inner_(inner), counts_(counts) {}

  CudaApi& inner() { return inner_; }
  GpuWorkCounts& counts() { return counts_; }

  int runtime_version() override { return inner_.runtime_version(); }
  int driver_version() override { return inner_.driver_version(); }
  int gpu_count(std::string* why_none) override { return inner_.gpu_count(why_none); }
  PhysicalGpu gpu_properties(int ordinal) override { return inner_.gpu_properties(ordinal); }
  std::size_t free_bytes() override { return inner_.free_bytes(); }
  int current_gpu() override { return inner_.current_gpu(); }
  void set_current_gpu(int ordinal) override { inner_.set_current_gpu(ordinal); }
  bool can_access_peer(int ordinal, int peer) override {
    return inner_.can_access_peer(ordinal, peer);
  }
  void enable_peer_access(int peer) override { inner_.enable_peer_access(peer); }
  int sm_count(int ordinal) override { return inner_.sm_count(ordinal); }
  CudaExecutionSet make_green_executions(int ordinal, int count,
                                         std::string* unavailable) override {
    return inner_.make_green_executions(ordinal, count, unavailable);
  }

  void* allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  // cudaFree waits for the whole GPU first: a host wait.
  void release(void* block, int ordinal) noexcept override {
    counts_.add(GpuWork::kHostWait);
    inner_.release(block, ordinal);
  }
  void* allocate_async(std::size_t bytes, GpuStream stream) override {
    return inner_.allocate_async(bytes, stream);
  }
  void release_async(void* block, GpuStream stream) override {
    inner_.release_async(block, stream);
  }
  void fill_bytes_async(void* dst, int value, std::size_t bytes, GpuStream stream) override {
    counts_.add(GpuWork::kKernel);
    inner_.fill_bytes_async(dst, value, bytes, stream);
  }
  void* allocate_pinned(std::size_t bytes) override { return inner_.allocate_pinned(bytes); }
  void release_pinned(void* block) noexcept override { inner_.release_pinned(block); }
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                  GpuStream stream) override {
    counts_.add(kind == CopyKind::kHostToDevice   ? GpuWork::kCopyToDevice
                : kind == CopyKind::kDeviceToHost ? GpuWork::kCopyToHost
                                                  : GpuWork::kCopyOnDevice);
    inner_.copy_async(dst, src, bytes, kind, stream);
  }
  void copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu, std::size_t bytes,
                       GpuStream stream) override {
    counts_.add(GpuWork::kCopyOnDevice);
    inner_.copy_peer_async(dst, dst_gpu, src, src_gpu, bytes, stream);
  }

  GpuStream create_stream() override { return inner_.create_stream(); }
  void destroy_stream(GpuStream stream) noexcept override { inner_.destroy_stream(stream); }
  void synchronize_stream(GpuStream stream) override {
    counts_.add(GpuWork::kHostWait);
    inner_.synchronize_stream(stream);
  }
  GpuEvent create_event() override {
    counts_.add(GpuWork::kEventMade);
    return inner_.create_event();
  }
  void destroy_event(GpuEvent event) noexcept override {
    counts_.add(GpuWork::kEventDestroyed);
    inner_.destroy_event(event);
  }
  void record_event(GpuEvent event, GpuStream stream) override {
    counts_.add(GpuWork::kEventRecorded);
    inner_.record_event(event, stream);
  }
  void wait_event(GpuStream stream, GpuEvent event) override {
    counts_.add(GpuWork::kStreamWait);
    inner_.wait_event(stream, event);
  }
  void synchronize_event(GpuEvent event) override {
    counts_.add(GpuWork::kHostWait);
    inner_.synchronize_event(event);
  }
  float elapsed_ms(GpuEvent start, GpuEvent end) override { return inner_.elapsed_ms(start, end); }

  void begin_capture(GpuStream stream) override { inner_.begin_capture(stream); }
  GpuGraph end_capture(GpuStream stream) override { return inner_.end_capture(stream); }
  void launch_graph(GpuGraph graph, GpuStream stream) override {
    counts_.add(GpuWork::kGraphLaunch);
    inner_.launch_graph(graph, stream);
  }
  void destroy_graph(GpuGraph graph) noexcept override { inner_.destroy_graph(graph); }

  void launch_add(float* dst, const float* src, std::size_t n, GpuStream stream,
                  int ordinal) override {
    counts_.add(GpuWork::kKernel);
    inner_.launch_add(dst, src, n, stream, ordinal);
  }
  void launch_copy(float* dst, const float* src, std::size_t n, GpuStream stream,
                   int ordinal) override {
    counts_.add(GpuWork::kKernel);
    inner_.launch_copy(dst, src, n, stream, ordinal);
  }
  void launch_scale(float* x, std::size_t n, float factor, GpuStream stream, int ordinal) override {
    counts_.add(GpuWork::kKernel);
    inner_.launch_scale(x, n, factor, stream, ordinal);
  }
  void launch_one_shot(const OneShotBuffers& buffers, std::size_t begin, std::size_t end,
                       GpuStream stream, int ordinal) override {
    counts_.add(GpuWork::kKernel);
    inner_.launch_one_shot(buffers, begin, end, stream, ordinal);
  }

 private:
  CudaApi& inner_;
  GpuWorkCounts& counts_;
};

}  // namespace mirrorlab::vgpu
