#include "virtualgpu/devices/barrier.h"

namespace mirrorlab::vgpu {

CancellableBarrier::CancellableBarrier(int parties) : parties_(parties) {
  if (parties < 1) throw std::invalid_argument("a barrier needs at least one party");
}

void CancellableBarrier::arrive_and_wait(const std::function<void()>& on_complete) {
  std::unique_lock lock(mutex_);
  if (aborted_) throw CollectiveAborted();
  const std::uint64_t generation = generation_;
  if (++waiting_ == parties_) {
    // The last party runs the completion with the lock held: every other party is parked in
    // cv_.wait, so it sees all they wrote before arriving and nobody runs ahead of it. If the
    // completion throws, the barrier is aborted so the others do not wait for ever.
    if (on_complete) {
      try {
        on_complete();
      } catch (...) {
        aborted_ = true;
        cv_.notify_all();
        throw;
      }
    }
    waiting_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) throw CollectiveAborted();  // woken by abort(), not completion
}

void CancellableBarrier::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

bool CancellableBarrier::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

}  // namespace mirrorlab::vgpu
