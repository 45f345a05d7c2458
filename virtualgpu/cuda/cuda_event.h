// CUDA events for timing work on a device's stream: the strategy records one per phase and reads
// the elapsed times after the step, so timing never makes the host wait mid-step.
// Only for files built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

namespace mirrorlab::vgpu {

// Owns one cudaEvent_t (created with timing on). Move-only.
class CudaEvent {
 public:
  CudaEvent();  // cudaEventCreateWithFlags(cudaEventDefault); throws CudaError
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream);  // cudaEventRecord
  void synchronize() const;          // waits for the work before the record
  bool done() const;                 // cudaEventQuery: true once reached
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two recorded events (cudaEventElapsedTime: about 0.5 us resolution).
// Waits for `end`. Throws CudaError when either was never recorded.
float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

}  // namespace mirrorlab::vgpu
