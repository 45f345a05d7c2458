#include "virtualgpu/stream.h"

#include <utility>

namespace mirrorlab::vgpu {

void Event::wait() const {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
}

bool Event::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

TimePoint Event::time() const {
  std::lock_guard lock(mutex_);
  return time_;
}

void Event::complete() {
  std::lock_guard lock(mutex_);
  time_ = Clock::now();
  done_ = true;
  cv_.notify_all();
}

Stream::Stream(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void Stream::enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  work_cv_.notify_one();
}

std::shared_ptr<Event> Stream::record_event() {
  auto event = std::make_shared<Event>();
  enqueue([event] { event->complete(); });
  return event;
}

void Stream::synchronize() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void Stream::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    work = nullptr;  // destroy captures before reporting idle
    lock.lock();
    if (error && !error_) error_ = error;
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace mirrorlab::vgpu
