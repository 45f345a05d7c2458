// The other workers of a session that trains as several (SessionConfig::workers = W > 1):
// workers 1 .. W-1. The session's own training thread is worker 0; every step it takes, each
// other worker takes too, so that each collective of the strategy (the all-reduce across workers,
// the statistics, the fingerprints) finds every worker there, as MPI's ranks do. Two kinds:
//   - OtherWorkerThreads (other_worker_threads.h): threads of this process over
//     vgpu::ThreadWorkers, the lessons' stand-in for mpirun;
//   - the other processes of `mpirun -np W mirrorlab gui` (worker_followers.h): ranks 1 .. W-1
//     follow worker 0's window over MPI, told of each step, each rebuild and the end.
//
// Threads: the session's training thread calls start_step() and finish_step(); its constructor
// thread the constructor and wait_built(); status() any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/io/dataset.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::core {

struct SessionConfig;

struct DeviceStatus {
  std::string name;                             // "/gpu:0"
  std::string what;                             // "CPU-backed virtual GPU", ...
  int cuda_ordinal = -1;                        // the physical card, or -1
  std::size_t limit = 0, in_use = 0, peak = 0;  // bytes
};

// What `devices` are, with their memory now.
std::vector<DeviceStatus> device_statuses(const std::vector<vgpu::Device*>& devices);
// The memory of `devices` now, into `statuses` (the same devices, in order).
void read_memory(const std::vector<vgpu::Device*>& devices, std::vector<DeviceStatus>& statuses);

// One worker of a run with several (SessionConfig::workers).
struct WorkerStatus {
  std::string tf_config;  // as seed note 002 writes it (vgpu::tf_config)
  std::string place;      // "thread 1 of this process", "pid 4242 on vm"
  // Its devices: another process's as of its last step (or its start), a thread's now.
  std::vector<DeviceStatus> devices;
  std::uint64_t fingerprint = 0;  // its replica 0's weights after its last step (0: none yet)
};

// What an exception says ("an unknown error" for one that is no std::exception).
std::string error_text(const std::exception_ptr& error);

class OtherWorkers {
 public:
  virtual ~OtherWorkers() = default;

  virtual int size() const = 0;               // every worker, worker 0 included
  virtual vgpu::WorkerGroup& worker_0() = 0;  // the group worker 0's strategy is built with
  // In words, for the Devices panel: "threads of this process", "processes (MPI ranks)".
  virtual std::string what_workers_are() const = 0;

  // After worker 0's strategy was built (or failed: `mine`, then every other is released):
  // throws the first other worker's error ("worker 1: out of memory on /gpu:0 ..."), else
  // rethrows `mine`.
  virtual void wait_built(std::exception_ptr mine = nullptr) = 0;
  // Each other worker runs its FitLoop's next step.
  virtual void start_step() = 0;
  // Waits for that step on every other worker: "" when all went well, else the first one's
  // error, "worker 1: ...".
  virtual std::string finish_step() = 0;
  // Worker 0's step failed or is stopping: no other worker may wait for it for ever.
  virtual void abort(const std::string& why) = 0;
  // Whether a step under way may be left in its middle (TrainingSession::stop() of a step held
  // at a phase boundary). Threads are released by abort(); processes waiting inside MPI's
  // collectives cannot be, so their session lets the held step run to its end first.
  virtual bool can_leave_a_step() const = 0;
  // Worker w (1 .. size()-1) as last seen.
  virtual WorkerStatus status(int w) const = 0;
};

// Makes the other workers of a session of `config` (SessionConfig::other_workers).
using MakeOtherWorkers = std::function<std::unique_ptr<OtherWorkers>(
    std::shared_ptr<const FashionMnist> data, const SessionConfig& config)>;

}  // namespace mirrorlab::core
