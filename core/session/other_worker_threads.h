// The other workers of a session as threads of this process (the lessons' stand-in for
// `mpirun -np W mirrorlab train`): workers 1 .. W-1, each a thread of its own with its own
// devices, MirroredStrategy and FitLoop, over a vgpu::ThreadWorkers group. The session's own
// training thread is worker 0 (core/session/other_workers.h says what every kind of other
// workers does).
//
// Threads: as OtherWorkers; devices() any thread (the devices do not change).
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/io/dataset.h"
#include "core/session/other_workers.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/workers/thread_worker_group.h"

namespace mirrorlab::core {

class OtherWorkerThreads final : public OtherWorkers {
 public:
  // Starts a thread per worker 1 .. workers-1, each building its devices (as `config` says) and
  // its strategy, which meets worker 0's (built by the caller with worker_0()) in its first
  // collectives; wait_built() waits for them.
  OtherWorkerThreads(int workers, std::shared_ptr<const FashionMnist> data,
                     const SessionConfig& config);
  ~OtherWorkerThreads() override;  // releases any worker waiting for the others, joins them
  OtherWorkerThreads(const OtherWorkerThreads&) = delete;
  OtherWorkerThreads& operator=(const OtherWorkerThreads&) = delete;

  int size() const override { return group_.size(); }
  vgpu::WorkerGroup& worker_0() override { return group_.worker(0); }
  vgpu::WorkerGroup& worker(int w) { return group_.worker(w); }
  std::string what_workers_are() const override { return "threads of this process"; }

  void wait_built(std::exception_ptr mine = nullptr) override;
  void start_step() override;
  // A worker that only stopped waiting because another failed is not the one named.
  std::string finish_step() override;
  // Releases every worker waiting in a collective (worker 0 failed or is stopping).
  void abort(const std::string& why) override { group_.abort(why); }
  bool can_leave_a_step() const override { return true; }  // abort() releases the others
  WorkerStatus status(int w) const override;

  // Worker w's devices (1 .. size()-1).
  const std::vector<vgpu::Device*>& devices(int w) const;

 private:
  struct Worker;
  void run(Worker& w, std::shared_ptr<const FashionMnist> data, const SessionConfig& config);

  vgpu::ThreadWorkers group_;
  std::vector<std::unique_ptr<Worker>> others_;  // workers 1 .. W-1
  mutable std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace mirrorlab::core
