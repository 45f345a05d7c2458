// A device's stream: one worker thread running an in-order queue of work, with events.
//
// This is how a CPU-backed virtual GPU executes: work submitted to a stream runs in submission
// order on the stream's own thread, concurrently with other streams, exactly as kernels queued
// on a CUDA stream do. An event recorded on a stream completes, and takes its time stamp, when
// the stream reaches it.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "virtualgpu/clock.h"

namespace mirrorlab::vgpu {

class Event {
 public:
  void wait() const;        // blocks until the stream has reached the event
  bool done() const;
  TimePoint time() const;   // when it was reached; only valid once done()

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

 private:
  void loop();
  std::string name_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started after the rest is ready
};

}  // namespace mirrorlab::vgpu
