#include "virtualgpu/devices/stream.h"

#include <utility>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

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

template <class Ready>
bool Stream::spin_until(Ready ready, std::int64_t budget_us) const {
  if (budget_us <= 0) return ready();
  const TimePoint deadline = Clock::now() + std::chrono::microseconds(budget_us);
  do {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (Clock::now() < deadline);
  return ready();
}

void Stream::enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    pending_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_one();
}

std::shared_ptr<Event> Stream::record_event() {
  auto event = std::make_shared<Event>();
  enqueue([event] { event->complete(); });
  return event;
}

void Stream::synchronize() {
  const std::int64_t window = spin_us_.load(std::memory_order_relaxed);
  const TimePoint start = Clock::now();
  auto idle = [this] { return queue_.empty() && !busy_; };
  if (window > 0 && pending_.load(std::memory_order_acquire) > 0) {
    // Sleep through most of the expected wait, then poll for its end.
    const std::int64_t expected = expected_wait_us_.load(std::memory_order_relaxed);
    if (expected > 2 * window) {
      std::unique_lock lock(mutex_);
      idle_cv_.wait_for(lock, std::chrono::microseconds(expected - window), idle);
    }
    spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; }, 2 * window);
  }
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, idle);
  if (window > 0) {
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
    const std::int64_t old = expected_wait_us_.load(std::memory_order_relaxed);
    expected_wait_us_.store((3 * old + waited.count()) / 4, std::memory_order_relaxed);
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool Stream::bind_to_cpu(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(thread_.native_handle(), sizeof set, &set) != 0) return false;
  bound_cpu_.store(cpu, std::memory_order_relaxed);
  return true;
#else
  (void)cpu;
  return false;
#endif
}

void Stream::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stopping_) {
      lock.unlock();
      spin_until([this] { return pending_.load(std::memory_order_acquire) > 0; },
                 spin_us_.load(std::memory_order_relaxed));
      lock.lock();
    }
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
    pending_.fetch_sub(1, std::memory_order_release);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace mirrorlab::vgpu
