// A device's stream: one worker thread running an in-order queue of work, with events.
//
// This is how a CPU-backed virtual GPU executes: work submitted to a stream runs in submission
// order on the stream's own thread, concurrently with other streams, exactly as kernels queued
// on a CUDA stream do. An event recorded on a stream completes, and takes its time stamp, when
// the stream reaches it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "virtualgpu/memory/clock.h"

namespace mirrorlab::vgpu {

class Event {
 public:
  void wait() const;  // blocks until the stream has reached the event
  bool done() const;
  TimePoint time() const;  // when it was reached; only valid once done()

 private:
  friend class Stream;
  void complete();
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  TimePoint time_{};
};

class Stream {
 public:
  explicit Stream(std::string name);
  ~Stream();  // runs what is queued, then joins the thread
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& name() const { return name_; }

  // Queues work; returns at once. An exception thrown by the work is kept: the stream goes on
  // with the next item, and the first kept exception is rethrown (and cleared) by synchronize().
  void enqueue(std::function<void()> work);
  std::shared_ptr<Event> record_event();
  // Waits until everything queued so far has run, then rethrows the first kept exception.
  void synchronize();

  // Polling instead of sleeping, for waits that are short. Waking a sleeping thread costs tens
  // of microseconds on a VM, a few percent of a small model's step. With a window W > 0 the
  // worker polls for new work for up to W before it sleeps, and synchronize() sleeps until about
  // W before the work is expected to end (the length of its recent waits) and polls from there.
  // Polling pays only when every polling thread has a core of its own (like OpenMP's
  // OMP_WAIT_POLICY=active): the registry decides. Zero (the default) always sleeps at once.
  void set_spin_wait(std::chrono::microseconds budget) { spin_us_ = budget.count(); }
  std::chrono::microseconds spin_wait() const { return std::chrono::microseconds(spin_us_.load()); }

  // Runs the stream's thread on CPU `cpu` only (Linux), as OpenMP's OMP_PROC_BIND binds its
  // threads, so the OS cannot move it between cores, nor put two devices on one core while
  // another core idles. False where the OS refuses (the thread then stays free to move).
  bool bind_to_cpu(int cpu);
  int bound_cpu() const { return bound_cpu_.load(std::memory_order_relaxed); }  // -1: not bound

 private:
  void loop();
  // Polls `ready` for at most the spin budget; true if it became true.
  template <class Ready>
  bool spin_until(Ready ready, std::int64_t budget_us) const;
  std::string name_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::atomic<std::size_t> pending_{0};  // queued plus running items, for polling without the lock
  std::atomic<std::int64_t> spin_us_{0};
  std::atomic<std::int64_t> expected_wait_us_{0};  // moving average of synchronize()'s waits
  std::atomic<int> bound_cpu_{-1};  // the CPU bind_to_cpu() gave the thread; -1: none
  std::thread thread_;              // last: started after the rest is ready
};

}  // namespace mirrorlab::vgpu
