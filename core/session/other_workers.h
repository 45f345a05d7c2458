// The other workers of a session that trains as several workers in one process (the lessons'
// stand-in for `mpirun -np W mirrorlab train`): workers 1 .. W-1, each a thread of its own with
// its own devices, MirroredStrategy and FitLoop, over a vgpu::ThreadWorkers group. The session's
// own training thread is worker 0; every step it takes, each other worker takes too, so that each
// collective of the strategy (the all-reduce across workers, the statistics, the fingerprints)
// finds every worker there, as MPI's ranks do.
//
// Threads: the session's training thread calls start_step() and finish_step(); its constructor
// thread the constructor and wait_built(); devices() any thread (the devices do not change).
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/io/dataset.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/device_registry.h"
#include "virtualgpu/thread_worker_group.h"

namespace mirrorlab::core {

struct SessionConfig;

class OtherWorkers {
 public:
  // Starts a thread per worker 1 .. workers-1, each building its devices (as `config` says) and
  // its strategy, which meets worker 0's (built by the caller with worker_0()) in its first
  // collectives; wait_built() waits for them.
  OtherWorkers(int workers, std::shared_ptr<const FashionMnist> data, const SessionConfig& config);
  ~OtherWorkers();  // releases any worker waiting for the others, then joins them
  OtherWorkers(const OtherWorkers&) = delete;
  OtherWorkers& operator=(const OtherWorkers&) = delete;

  int size() const { return group_.size(); }  // every worker, worker 0 included
  vgpu::WorkerGroup& worker_0() { return group_.worker(0); }
  vgpu::WorkerGroup& worker(int w) { return group_.worker(w); }

  // After worker 0's strategy was built (or failed: `mine`, then every other is released):
  // throws the first other worker's error ("worker 1: out of memory on /gpu:0 ..."), else
  // rethrows `mine`.
  void wait_built(std::exception_ptr mine = nullptr);
  // Each other worker runs its FitLoop's next step.
  void start_step();
  // Waits for that step on every other worker: "" when all went well, else the first one's
  // error, "worker 1: ...". A worker that only stopped waiting because another failed is not
  // the one named.
  std::string finish_step();
  // Releases every worker waiting in a collective (worker 0 failed or is stopping).
  void abort(const std::string& why) { group_.abort(why); }

  // Worker w's devices (1 .. size()-1).
  const std::vector<vgpu::Device*>& devices(int w) const;

 private:
  struct Worker;
  void run(Worker& w, std::shared_ptr<const FashionMnist> data, const SessionConfig& config);

  vgpu::ThreadWorkers group_;
  std::vector<std::unique_ptr<Worker>> others_;  // workers 1 .. W-1
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace mirrorlab::core
