// The CudaApi of the CUDA runtime (CUDA builds only): each method one runtime call, checked with
// MIRRORLAB_CUDA_CHECK. The collectives' kernel launches are left to the layer that has the
// kernels (virtualgpu/devices/process_cuda_api.cpp completes this class). This is the layer only a
// GPU can check: scripts/gpu-check runs it.
#pragma once

#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::vgpu {

class RuntimeCudaApi : public CudaApi {
 public:
  int runtime_version() override;
  int driver_version() override;
  int gpu_count(std::string* why_none) override;
  PhysicalGpu gpu_properties(int ordinal) override;
  std::size_t free_bytes() override;
  int current_gpu() override;
  void set_current_gpu(int ordinal) override;
  bool can_access_peer(int ordinal, int peer) override;
  void enable_peer_access(int peer) override;
  int sm_count(int ordinal) override;
  CudaExecutionSet make_green_executions(int ordinal, int count, std::string* unavailable) override;

  void* allocate(std::size_t bytes) override;
  void release(void* block, int ordinal) noexcept override;
  void* allocate_async(std::size_t bytes, GpuStream stream) override;
  void release_async(void* block, GpuStream stream) override;
  void fill_bytes_async(void* dst, int value, std::size_t bytes, GpuStream stream) override;
  void* allocate_pinned(std::size_t bytes) override;
  void release_pinned(void* block) noexcept override;
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                  GpuStream stream) override;
  void copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu, std::size_t bytes,
                       GpuStream stream) override;

  GpuStream create_stream() override;
  void destroy_stream(GpuStream stream) noexcept override;
  void synchronize_stream(GpuStream stream) override;
  GpuEvent create_event() override;
  void destroy_event(GpuEvent event) noexcept override;
  void record_event(GpuEvent event, GpuStream stream) override;
  void wait_event(GpuStream stream, GpuEvent event) override;
  void synchronize_event(GpuEvent event) override;
  float elapsed_ms(GpuEvent start, GpuEvent end) override;

  void begin_capture(GpuStream stream) override;
  GpuGraph end_capture(GpuStream stream) override;
  void launch_graph(GpuGraph graph, GpuStream stream) override;
  void destroy_graph(GpuGraph graph) noexcept override;
};

}  // namespace mirrorlab::vgpu
