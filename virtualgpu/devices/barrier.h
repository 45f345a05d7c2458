// A barrier that can be aborted, so that one replica failing (out of memory, say) releases the
// others instead of leaving them waiting for ever.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>

namespace mirrorlab::vgpu {

// Thrown in a party waiting at (or arriving at) an aborted barrier.
class CollectiveAborted : public std::runtime_error {
 public:
  CollectiveAborted() : std::runtime_error("collective aborted: another replica failed") {}
};

class CancellableBarrier {
 public:
  explicit CancellableBarrier(int parties);

  // Blocks until all parties have arrived. The last to arrive runs `on_complete` (if any) before
  // anyone is released, so it sees everything the parties did before arriving. Reusable.
  // Throws CollectiveAborted once abort() has been called.
  void arrive_and_wait(const std::function<void()>& on_complete = {});
  void abort();
  bool aborted() const;

 private:
  const int parties_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace mirrorlab::vgpu
