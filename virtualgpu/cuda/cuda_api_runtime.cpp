// RuntimeCudaApi: the CudaApi over the CUDA runtime, one checked call per method.
#include "virtualgpu/cuda/cuda_api_runtime.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/green/cuda_green_context.h"

namespace mirrorlab::vgpu {
namespace {

cudaStream_t as_stream(GpuStream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(GpuEvent e) { return static_cast<cudaEvent_t>(e); }

cudaMemcpyKind as_kind(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyKind::kDeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyKind::kDeviceToDevice:
      break;
  }
  return cudaMemcpyDeviceToDevice;
}

}  // namespace

// ---- GPUs -------------------------------------------------------------------------------------
// Both answer without a driver: the runtime's version is built in, the driver's is 0 then.
int RuntimeCudaApi::runtime_version() {
  int version = 0;
  (void)cudaRuntimeGetVersion(&version);
  return version;
}

int RuntimeCudaApi::driver_version() {
  int version = 0;
  (void)cudaDriverGetVersion(&version);
  return version;
}

int RuntimeCudaApi::gpu_count(std::string* why_none) {
  // With no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver and leaves the count
  // untouched: it starts at 0.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // leave no error behind for the next kernel launch's check
    *why_none = "cudaGetDeviceCount: " + cuda_error_text(status);
    return 0;
  }
  if (count == 0) *why_none = "cudaGetDeviceCount found none";
  return count;
}

PhysicalGpu RuntimeCudaApi::gpu_properties(int ordinal) {
  cudaDeviceProp prop{};
  MIRRORLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  PhysicalGpu gpu;
  gpu.ordinal = ordinal;
  gpu.name = prop.name;
  gpu.total_bytes = prop.totalGlobalMem;
  gpu.sm_count = prop.multiProcessorCount;
  gpu.compute_major = prop.major;
  gpu.compute_minor = prop.minor;
  return gpu;
}

std::size_t RuntimeCudaApi::free_bytes() {
  std::size_t free = 0, total = 0;
  MIRRORLAB_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

int RuntimeCudaApi::current_gpu() {
  int ordinal = 0;
  MIRRORLAB_CUDA_CHECK(cudaGetDevice(&ordinal));
  return ordinal;
}

void RuntimeCudaApi::set_current_gpu(int ordinal) { MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal)); }

bool RuntimeCudaApi::can_access_peer(int ordinal, int peer) {
  int can = 0;
  MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, ordinal, peer));
  return can != 0;
}

void RuntimeCudaApi::enable_peer_access(int peer) {
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // not an error for us: clear it
    return;
  }
  MIRRORLAB_CUDA_CHECK(status);
}

int RuntimeCudaApi::sm_count(int ordinal) {
  int sms = 0;
  MIRRORLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  return sms;
}

CudaExecutionSet RuntimeCudaApi::make_green_executions(int ordinal, int count,
                                                       std::string* unavailable) {
  return vgpu::make_green_executions(ordinal, count, unavailable);
}

// ---- memory -----------------------------------------------------------------------------------
void* RuntimeCudaApi::allocate(std::size_t bytes) {
  void* block = nullptr;
  const cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  MIRRORLAB_CUDA_CHECK(status);
  return block;
}

// noexcept: no CurrentGpu guard (whose constructor throws); the caller's GPU is put back by hand.
void RuntimeCudaApi::release(void* block, int ordinal) noexcept {
  int previous = ordinal;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != ordinal &&
                        cudaSetDevice(ordinal) == cudaSuccess;
  const cudaError_t status = cudaFree(block);
  if (switched) (void)cudaSetDevice(previous);
  // At process exit the runtime may already be gone; anything else is worth a line.
  if (status != cudaSuccess && status != cudaErrorCudartUnloading) {
    std::fprintf(stderr, "mirrorlab: cudaFree on GPU:%d failed: %s\n", ordinal,
                 cuda_error_text(status).c_str());
  }
  (void)cudaGetLastError();
}

void* RuntimeCudaApi::allocate_async(std::size_t bytes, GpuStream stream) {
  void* block = nullptr;
  MIRRORLAB_CUDA_CHECK(cudaMallocAsync(&block, bytes, as_stream(stream)));
  return block;
}

void RuntimeCudaApi::release_async(void* block, GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaFreeAsync(block, as_stream(stream)));
}

void* RuntimeCudaApi::allocate_pinned(std::size_t bytes) {
  void* block = nullptr;
  MIRRORLAB_CUDA_CHECK(cudaMallocHost(&block, bytes));
  return block;
}

void RuntimeCudaApi::release_pinned(void* block) noexcept {
  const cudaError_t status = cudaFreeHost(block);
  if (status != cudaSuccess && status != cudaErrorCudartUnloading) {
    std::fprintf(stderr, "mirrorlab: cudaFreeHost failed: %s\n", cuda_error_text(status).c_str());
  }
  (void)cudaGetLastError();
}

void RuntimeCudaApi::fill_bytes_async(void* dst, int value, std::size_t bytes, GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, as_stream(stream)));
}

void RuntimeCudaApi::copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                                GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, as_kind(kind), as_stream(stream)));
}

void RuntimeCudaApi::copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu,
                                     std::size_t bytes, GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_gpu, src, src_gpu, bytes, as_stream(stream)));
}

// ---- streams and events -----------------------------------------------------------------------
GpuStream RuntimeCudaApi::create_stream() {
  cudaStream_t stream = nullptr;
  MIRRORLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void RuntimeCudaApi::destroy_stream(GpuStream stream) noexcept {
  (void)cudaStreamDestroy(as_stream(stream));
}

void RuntimeCudaApi::synchronize_stream(GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

GpuEvent RuntimeCudaApi::create_event() {
  cudaEvent_t event = nullptr;
  MIRRORLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));
  return event;
}

void RuntimeCudaApi::destroy_event(GpuEvent event) noexcept {
  (void)cudaEventDestroy(as_event(event));
}

// The stream this thread captures (thread-local capture: only its own thread queues on it).
thread_local GpuStream capturing_stream = nullptr;

// On a stream being captured, an event recorded as external becomes a node of the graph, recorded
// again (and so timed) by each launch. Outside a capture CUDA refuses that flag
// (cudaErrorIllegalState, seen on an H200): a plain record there.
void RuntimeCudaApi::record_event(GpuEvent event, GpuStream stream) {
  if (stream != nullptr && stream == capturing_stream) {
    MIRRORLAB_CUDA_CHECK(
        cudaEventRecordWithFlags(as_event(event), as_stream(stream), cudaEventRecordExternal));
    return;
  }
  MIRRORLAB_CUDA_CHECK(cudaEventRecord(as_event(event), as_stream(stream)));
}

void RuntimeCudaApi::wait_event(GpuStream stream, GpuEvent event) {
  MIRRORLAB_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}

void RuntimeCudaApi::synchronize_event(GpuEvent event) {
  MIRRORLAB_CUDA_CHECK(cudaEventSynchronize(as_event(event)));
}

// cudaEventElapsedTime: about 0.5 us resolution; an event never recorded is an error.
float RuntimeCudaApi::elapsed_ms(GpuEvent start, GpuEvent end) {
  float ms = 0;
  MIRRORLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start), as_event(end)));
  return ms;
}

// Thread-local: another replica's thread may allocate or wait while this one captures.
void RuntimeCudaApi::begin_capture(GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal));
  capturing_stream = stream;
}

GpuGraph RuntimeCudaApi::end_capture(GpuStream stream) {
  cudaGraph_t graph = nullptr;
  if (capturing_stream == stream) capturing_stream = nullptr;
  MIRRORLAB_CUDA_CHECK(cudaStreamEndCapture(as_stream(stream), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);  // the instance keeps what it needs
  MIRRORLAB_CUDA_CHECK(made);
  return exec;
}

void RuntimeCudaApi::launch_graph(GpuGraph graph, GpuStream stream) {
  MIRRORLAB_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), as_stream(stream)));
}

void RuntimeCudaApi::destroy_graph(GpuGraph graph) noexcept {
  (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

}  // namespace mirrorlab::vgpu
