// Events of one GPU made once and used again: a step that needs events (the collectives' marks
// of what is ready, the pairs that time a transfer) takes them here instead of creating and
// destroying its own, which costs host time every step (cudaEventCreate and cudaEventDestroy: a
// ring on 4 logical GPUs made and destroyed 48 a step). An event may be recorded again while
// work queued earlier still waits for its previous record: a wait takes the record it sees when
// it is queued.
#pragma once

#include <mutex>
#include <vector>

#include "virtualgpu/cuda/cuda_api.h"

namespace mirrorlab::vgpu {

class CudaEventPool {
 public:
  // Events of GPU `ordinal` through `api` (which outlives the pool). Makes none yet.
  CudaEventPool(CudaApi& api, int ordinal) : api_(api), ordinal_(ordinal) {}
  ~CudaEventPool();  // destroys every event it made; none may still be taken
  CudaEventPool(const CudaEventPool&) = delete;
  CudaEventPool& operator=(const CudaEventPool&) = delete;

  // One event of the pool's GPU (made when none is free), until it is given back. Thread-safe.
  GpuEvent take();
  void give_back(GpuEvent event);
  int made() const;  // events made so far

 private:
  CudaApi& api_;
  int ordinal_;
  mutable std::mutex mutex_;
  std::vector<GpuEvent> free_;
  int made_ = 0;
};

// An event taken from a pool for a scope, given back after.
class PooledEvent {
 public:
  explicit PooledEvent(CudaEventPool& pool) : pool_(&pool), event_(pool.take()) {}
  ~PooledEvent() {
    if (event_ != nullptr) pool_->give_back(event_);
  }
  PooledEvent(PooledEvent&& other) noexcept : pool_(other.pool_), event_(other.event_) {
    other.event_ = nullptr;
  }
  PooledEvent& operator=(PooledEvent&&) = delete;
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;
  GpuEvent get() const { return event_; }

 private:
  CudaEventPool* pool_;
  GpuEvent event_;
};

}  // namespace mirrorlab::vgpu
