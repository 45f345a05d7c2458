// What the host asks of a GPU during a step, counted at the one seam every call goes through
// (CudaApi for the runtime, the model's GpuModelApi for cuBLAS and its kernels): kernel launches,
// cuBLAS calls, host waits, copies, events made, destroyed and recorded, and waits one stream
// makes for another. A small model's step on a GPU costs what the host does, not what the card
// computes, so these are the numbers that say why a step takes what it takes.
//
// Each call is counted under the calling thread's work phase (WorkPhaseScope), which the
// replica's code sets around a step's parts; calls outside any scope count as kOther.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace mirrorlab::vgpu {

enum class GpuWork : int {
  kKernel,        // one of our kernels launched
  kBlas,          // one cuBLAS call (it launches one kernel or more)
  kHostWait,      // the host waits for the GPU: a stream or an event synchronized
  kCopyToDevice,  // a copy from host memory
  kCopyToHost,    // a copy into host memory
  kCopyOnDevice,  // a copy between device buffers (of one GPU, or peers)
  kEventMade,
  kEventDestroyed,
  kEventRecorded,
  kStreamWait,   // a stream made to wait for another's event (no host wait)
  kGraphLaunch,  // a captured graph launched: all its kernels, copies and events in one call
};
inline constexpr int kNumGpuWork = 11;
const char* to_string(GpuWork work);  // "kernels", "cuBLAS calls", "host waits", ...

enum class WorkPhase : int {
  kSplit,  // the shard copied in
  kForward,
  kBackward,  // with the loss and the check for NaN gradients
  kAllReduce,
  kUpdate,
  kStepEnd,  // the step's end: its marks read, the weights' fingerprint, the last wait
  kOther,    // anything outside a step (setup, evaluation, a test's calls)
};
inline constexpr int kNumWorkPhases = 7;
const char* to_string(WorkPhase phase);  // "split", "forward", ..., "other"

// Counts by phase and kind: one row per phase.
using GpuWorkTable = std::array<std::array<std::int64_t, kNumGpuWork>, kNumWorkPhases>;

// later - earlier, cell by cell: what happened between two snapshots.
GpuWorkTable difference(const GpuWorkTable& later, const GpuWorkTable& earlier);
// A column's total over every phase.
std::int64_t total(const GpuWorkTable& table, GpuWork work);
// The table as text, each count divided by `per` (the steps it covers): a row per kind of work
// ("kernels", "host waits", ...), a column per phase of a step (kOther left out) and their total
// ("the step"), one decimal where a count is not a whole number per step; within 80 columns.
std::string format_gpu_work(const GpuWorkTable& table, double per);

// Thread-safe counters (relaxed atomics: a count, not an ordering).
class GpuWorkCounts {
 public:
  GpuWorkCounts() { reset(); }
  GpuWorkCounts(const GpuWorkCounts&) = delete;
  GpuWorkCounts& operator=(const GpuWorkCounts&) = delete;

  // One call of kind `work`, under the calling thread's phase.
  void add(GpuWork work);
  GpuWorkTable snapshot() const;
  void reset();

 private:
  std::array<std::array<std::atomic<std::int64_t>, kNumGpuWork>, kNumWorkPhases> counts_;
};

// The calling thread's work phase for a scope (the previous one back after).
class WorkPhaseScope {
 public:
  explicit WorkPhaseScope(WorkPhase phase);
  ~WorkPhaseScope();
  WorkPhaseScope(const WorkPhaseScope&) = delete;
  WorkPhaseScope& operator=(const WorkPhaseScope&) = delete;

 private:
  WorkPhase previous_;
};

WorkPhase current_work_phase();

// The counts of this process's CUDA runtime and cuBLAS (process_cuda_api() and
// runtime_gpu_model_api() count into it).
GpuWorkCounts& process_gpu_work_counts();

}  // namespace mirrorlab::vgpu
