// cuda_runtime.h with the CUDA runtime: enumeration, the cudaMalloc allocator, streams, events.
// Host code only (no kernels), so it is compiled by the C++ compiler against cudart.
//
// Sections: errors | enumeration | allocator | threads and peers | execution | events
#include "virtualgpu/cuda/cuda_runtime.h"

#include <cstdio>
#include <string>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/cuda_event.h"
#include "virtualgpu/cuda/cuda_green_context.h"

namespace mirrorlab::vgpu {

// ---------------------------------------------------------------------------------- errors ---

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")";
}

void throw_cuda_error(cudaError_t error, const char* expression, const char* file, int line) {
  // A failed call can leave its error as the thread's "last error"; clear it so the next
  // cudaGetLastError() after a kernel launch reports that launch, not this call.
  (void)cudaGetLastError();
  throw CudaError(static_cast<int>(error), std::string(expression) + " failed at " + file + ":" +
                                               std::to_string(line) + ": " +
                                               cuda_error_text(error));
}

CurrentGpuGuard::CurrentGpuGuard(int ordinal) {
  MIRRORLAB_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != ordinal) {
    MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal));
    changed_ = true;
  }
}

CurrentGpuGuard::~CurrentGpuGuard() {
  if (changed_) (void)cudaSetDevice(previous_);  // previous_ was valid a moment ago
}

bool cuda_built() { return true; }

std::string cuda_build_description() {
  return "built with CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10);
}

// ----------------------------------------------------------------------------- enumeration ---

std::size_t gpu_free_bytes(int ordinal) {
  CurrentGpuGuard guard(ordinal);
  std::size_t free = 0, total = 0;
  MIRRORLAB_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

GpuInventory enumerate_gpus() {
  GpuInventory inventory;
  inventory.cuda_built = true;
  // Both work without a driver: the runtime's version is built in, the driver's is 0 then.
  (void)cudaRuntimeGetVersion(&inventory.runtime_version);
  (void)cudaDriverGetVersion(&inventory.driver_version);
  // With no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver and leaves the count
  // untouched: it starts at 0.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    inventory.unavailable_reason =
        "no CUDA GPU visible (cudaGetDeviceCount: " + cuda_error_text(status) + ")";
    return inventory;
  }
  if (count == 0) {
    inventory.unavailable_reason = "no CUDA GPU visible (cudaGetDeviceCount found none)";
    return inventory;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    MIRRORLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    PhysicalGpu gpu;
    gpu.ordinal = i;
    gpu.name = prop.name;
    gpu.total_bytes = prop.totalGlobalMem;
    gpu.free_bytes = gpu_free_bytes(i);
    gpu.sm_count = prop.multiProcessorCount;
    gpu.compute_major = prop.major;
    gpu.compute_minor = prop.minor;
    inventory.gpus.push_back(gpu);
  }
  inventory.peer_access.assign(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int can = 0;
      MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
      inventory.peer_access[i][j] = can != 0;
    }
  }
  return inventory;
}

// ------------------------------------------------------------------------------- allocator ---

namespace {

class CudaAllocator final : public BlockAllocator {
 public:
  explicit CudaAllocator(int ordinal) : ordinal_(ordinal) {
    CurrentGpuGuard guard(ordinal_);
    MIRRORLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&zero_stream_, cudaStreamNonBlocking));
  }
  ~CudaAllocator() override {
    if (zero_stream_ != nullptr) (void)cudaStreamDestroy(zero_stream_);
  }

  void* allocate(std::size_t bytes) override {
    CurrentGpuGuard guard(ordinal_);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, bytes);  // 256-byte aligned
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;  // the card is full: the arena's out-of-memory error, with exhausted()
    }
    MIRRORLAB_CUDA_CHECK(status);
    // Zeroed on a stream of our own, and waited for: a plain cudaMemset runs on the legacy
    // default stream, which the devices' non-blocking streams do not wait for, so a kernel could
    // read the block before it is zero.
    const cudaError_t zeroed = cudaMemsetAsync(ptr, 0, bytes, zero_stream_);
    const cudaError_t waited = zeroed == cudaSuccess ? cudaStreamSynchronize(zero_stream_) : zeroed;
    if (waited != cudaSuccess) {
      (void)cudaFree(ptr);
      MIRRORLAB_CUDA_CHECK(waited);
    }
    return ptr;
  }

  // cudaFree waits for the whole device to be idle: arenas should hold blocks across steps.
  // It runs with the block's GPU current, so that the wait is for that GPU's work, and gives
  // the thread its GPU back (noexcept: no CurrentGpuGuard, whose constructor throws).
  void release(void* ptr, std::size_t /*bytes*/) noexcept override {
    int previous = ordinal_;
    const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != ordinal_ &&
                          cudaSetDevice(ordinal_) == cudaSuccess;
    const cudaError_t status = cudaFree(ptr);
    if (switched) (void)cudaSetDevice(previous);
    // At process exit the runtime may already be gone; anything else is worth a line.
    if (status != cudaSuccess && status != cudaErrorCudartUnloading) {
      std::fprintf(stderr, "mirrorlab: cudaFree on GPU:%d failed: %s\n", ordinal_,
                   cuda_error_text(status).c_str());
    }
    (void)cudaGetLastError();
  }

  bool host_accessible() const override { return false; }
  std::string exhausted() const override { return gpu_memory_exhausted(ordinal_); }
  MemoryRanOut ran_out() const override { return MemoryRanOut::kGpu; }

 private:
  int ordinal_;
  cudaStream_t zero_stream_ = nullptr;
};

}  // namespace

std::unique_ptr<BlockAllocator> make_cuda_allocator(int ordinal) {
  return std::make_unique<CudaAllocator>(ordinal);
}

// ----------------------------------------------------------------------- threads and peers ---

void bind_thread_to_gpu(int ordinal) { MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal)); }

void enable_peer_access(const std::vector<int>& ordinals) {
  for (int from : ordinals) {
    CurrentGpuGuard guard(from);
    for (int to : ordinals) {
      if (to == from) continue;
      int can = 0;
      MIRRORLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
      if (can == 0) continue;  // copies between them go through the host instead
      const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        continue;
      }
      MIRRORLAB_CUDA_CHECK(status);
    }
  }
}

// ------------------------------------------------------------------------------- execution ---

namespace {

// A non-blocking stream on the GPU: it does not wait for the legacy default stream, so the
// logical GPUs' kernels can run side by side on the card.
class SharedSmExecution final : public CudaExecution {
 public:
  SharedSmExecution(int ordinal, int sm_count) : sm_count_(sm_count) {
    CurrentGpuGuard guard(ordinal);
    MIRRORLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~SharedSmExecution() override {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  void* stream() const override { return stream_; }
  int sm_count() const override { return sm_count_; }
  bool own_sms() const override { return false; }

 private:
  cudaStream_t stream_ = nullptr;
  int sm_count_;
};

}  // namespace

CudaExecutionSet make_cuda_executions(int ordinal, int count, bool sm_split) {
  int sms = 0;
  MIRRORLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  CudaExecutionSet set;
  std::string unavailable;
  if (sm_split) {
    set = make_green_executions(ordinal, count, &unavailable);
    if (!set.devices.empty()) return set;
  }
  for (int i = 0; i < count; ++i) {
    set.devices.push_back(std::make_unique<SharedSmExecution>(ordinal, sms));
  }
  const std::string shared =
      "the devices share all " + std::to_string(sms) + " SMs of GPU:" + std::to_string(ordinal);
  set.sm_note = sm_split ? "an SM split is not available: " + unavailable + "; " + shared : shared;
  return set;
}

// ---------------------------------------------------------------------------------- events ---

CudaEvent::CudaEvent() {
  MIRRORLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDefault));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) {
  MIRRORLAB_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void CudaEvent::synchronize() const { MIRRORLAB_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool CudaEvent::done() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;  // an answer, not an error
  MIRRORLAB_CUDA_CHECK(status);
  return true;
}

float elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  end.synchronize();
  float ms = 0;
  MIRRORLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace mirrorlab::vgpu
