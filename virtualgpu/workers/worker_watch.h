// Watching the other workers while this one trains, so that a worker that dies never leaves the
// others waiting for ever.
//
// Why a watch of our own: in Open MPI 4.1 a blocking collective whose peer has died does not
// return. Between processes on one host the shared-memory transport (vader) simply waits for
// data that never comes; MPI_ERRORS_RETURN does not help, since no error is ever raised, and
// Open MPI 4.1 has no fault-tolerant MPI (ULFM) to revoke the communicator. mpirun itself ends
// the job when it sees a process die, but only about a second later, with SIGTERM then SIGKILL,
// in its own words (measured on this VM: SIGTERM 1.0 s after the death, SIGKILL 1.5 s later).
// So each worker has a thread that looks, every `period`, at the workers on its own host by
// their process ids (kill(pid, 0), and /proc for a zombie), and at how long the collective under
// way has waited: a worker on another host cannot be seen, only waited for, up to `timeout`.
// What it finds goes to `on_lost` with a sentence naming the worker; the command line's handler
// prints it and ends the process at once (the thread blocked inside MPI cannot be woken).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::vgpu {

struct WorkerLoss {
  int worker = -1;         // the worker found gone; -1 when a wait timed out (none seen gone)
  bool timed_out = false;  // a collective waited longer than the timeout
  std::string sentence;    // what happened, naming the worker(s), where this one was
};

// True when process `pid` on this host is gone (no such process, or a zombie not yet reaped).
bool process_gone(std::int64_t pid);

class WorkerWatch {
 public:
  using Lost = std::function<void(const WorkerLoss&)>;
  // Starts watching `places` (every worker, this one is `self`). `on_lost` is called once, on
  // the watch's thread; the watch stops after it.
  WorkerWatch(std::vector<WorkerPlace> places, int self, std::chrono::milliseconds timeout,
              Lost on_lost, std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~WorkerWatch();
  WorkerWatch(const WorkerWatch&) = delete;
  WorkerWatch& operator=(const WorkerWatch&) = delete;

  void set_activity(std::string activity);
  // Around every collective call: what it is ("the all-reduce across workers").
  void enter_collective(const char* what);
  void leave_collective();
  // No more watching (every worker is past its last collective: peers may now exit).
  void stop();

  // enter_collective() and leave_collective() around a scope. No watch (null): nothing.
  class InCollective {
   public:
    InCollective(WorkerWatch* watch, const char* what) : watch_(watch) {
      if (watch_) watch_->enter_collective(what);
    }
    ~InCollective() {
      if (watch_) watch_->leave_collective();
    }
    InCollective(const InCollective&) = delete;
    InCollective& operator=(const InCollective&) = delete;

   private:
    WorkerWatch* watch_;
  };

 private:
  void run();
  void check();
  void report(WorkerLoss loss);

  const std::vector<WorkerPlace> places_;
  const int self_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds period_;
  Lost on_lost_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string activity_ = "the start of the run";
  const char* collective_ = nullptr;
  std::chrono::steady_clock::time_point collective_since_{};
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace mirrorlab::vgpu
