// Physical CUDA GPUs and what a CUDA device is made of, behind a header with no CUDA in it.
//
// The errors and what the build has are implemented twice: cuda_runtime.cpp with the CUDA runtime
// when the build has CUDA, cuda_runtime_stub.cpp without it, so callers (the registry, app/)
// need no #ifdefs. Enumeration and peers (gpu_inventory.h), the allocator and the execution
// contexts are written once, over a CudaApi (cuda_api.h), in every build.
//
// Implemented with CUDA:
//   - enumeration: name, memory (total and free), SM count, compute capability, peer access
//   - a BlockAllocator on cudaMalloc (zero-filled, never host-accessible)
//   - per-device execution: a non-blocking stream, or with an SM split a stream in a green context
//     that owns its own share of the SMs (driver API reached at run time, never linked;
//     cuda_green_context.cpp)
// Not implemented: MIG, multi-process sharing (MPS), memory pools (cudaMallocAsync).
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::vgpu {

// A CUDA call failed at run time. what() names the call, file:line and CUDA's own words.
class CudaError : public std::runtime_error {
 public:
  CudaError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }  // the cudaError_t value

 private:
  int code_;
};

struct PhysicalGpu {
  int ordinal = 0;   // CUDA's device number (after CUDA_VISIBLE_DEVICES)
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::size_t total_bytes = 0;
  std::size_t free_bytes = 0;  // when enumerated
  int sm_count = 0;
  int compute_major = 0, compute_minor = 0;
};

struct GpuInventory {
  bool cuda_built = false;
  // Empty when at least one GPU is visible; otherwise says why none is, e.g. "no CUDA GPU
  // visible (cudaGetDeviceCount: CUDA driver version is insufficient ...)".
  std::string unavailable_reason;
  std::vector<PhysicalGpu> gpus;
  // peer_access[i][j]: GPU i can read and write GPU j's memory directly (false on the diagonal).
  std::vector<std::vector<bool>> peer_access;
  // 13000 for CUDA 13.0; 0 when unknown (and cudaDriverGetVersion's 0: no driver installed)
  int driver_version = 0, runtime_version = 0;
};

// "13.0" for CUDA's 13000 (cudaRuntimeGetVersion's, cudaDriverGetVersion's, CUDART_VERSION).
inline std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// True when this build has the CUDA code; the text says what the build has or why it has none.
bool cuda_built();
std::string cuda_build_description();
// In a build without CUDA: "`what`, but this build has no CUDA: <why>. Rebuild ...", the one
// sentence every refusal of CUDA work in such a build gives. (With CUDA: for a device made
// without a CudaApi.)
std::string no_cuda_error(std::string_view what);

class CudaApi;  // cuda_api.h

// Blocks from cudaMalloc on GPU `ordinal` (through `api`), zeroed before they are handed out. A
// failed cudaMalloc gives nullptr, so the arena throws; the arena does the cap and the
// accounting. cuda_allocator.cpp, in every build.
std::unique_ptr<BlockAllocator> make_cuda_allocator(CudaApi& api, int ordinal);

// The execution resources of one device on its GPU: a non-blocking CUDA stream, in a green
// context with its own SMs when the GPU was split. Destroying it destroys the stream (and the
// green context): the devices using it must be gone first.
class CudaExecution {
 public:
  virtual ~CudaExecution() = default;
  virtual void* stream() const = 0;  // cudaStream_t
  virtual int sm_count() const = 0;  // SMs its kernels may use: its share, or the whole card
  virtual bool own_sms() const = 0;  // true when in a green context of its own
};

struct CudaExecutionSet {
  std::vector<std::unique_ptr<CudaExecution>> devices;
  // What the SM split did, in a sentence: "each logical GPU has its own 64 of the 132 SMs (green
  // contexts)", or why the SMs are shared ("green contexts need driver 12.4+: ...").
  std::string sm_note;
};

// `count` execution contexts on GPU `ordinal` (through `api`). With `sm_split`, each gets its own
// SMs through a green context when the driver has them; otherwise (or when it does not) they
// share all SMs, and sm_note says so. Throws CudaError when a stream cannot be made.
// cuda_executions.cpp, in every build.
CudaExecutionSet make_cuda_executions(CudaApi& api, int ordinal, int count, bool sm_split);

}  // namespace mirrorlab::vgpu
