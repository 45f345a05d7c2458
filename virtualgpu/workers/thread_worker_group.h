// Several workers in one process: W workers as threads of this process, each with its own devices,
// as mpirun's W processes would be. The lessons play in one process (the terminal's `lesson run`,
// the GUI's Lesson panel, ctest), so this is their stand-in for MPI: the same WorkerGroup seam,
// so the same core code (MirroredStrategy with a WorkerGroup, HierarchicalAllReduce) that
// `mpirun -np W mirrorlab train` runs.
//
// ThreadWorkers holds what the workers share: one meeting place for every collective. Each
// worker's thread calls the collectives of its own handle, worker(w), in the same order as the
// others (as every MPI rank does). A collective completes when all W have arrived: the last to
// arrive does the whole exchange (a sum in rank order, so every worker gets the same bits; a
// copy; a gather) into every worker's buffer while the others wait, then all go on.
//
// abort() releases every worker waiting in a collective, and makes every later one throw
// WorkersAborted: one worker failing (out of memory, a stopped step) must not leave the others
// waiting for ever. A group that was aborted stays so.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "virtualgpu/devices/barrier.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::vgpu {

// Thrown in a worker whose collective was abandoned because another worker stopped or failed.
class WorkersAborted : public std::runtime_error {
 public:
  explicit WorkersAborted(const std::string& why) : std::runtime_error(why) {}
};

class ThreadWorkers {
 public:
  // `workers` >= 1. Every worker's place is this process (its host and pid).
  explicit ThreadWorkers(int workers);
  ~ThreadWorkers();
  ThreadWorkers(const ThreadWorkers&) = delete;
  ThreadWorkers& operator=(const ThreadWorkers&) = delete;

  int size() const { return static_cast<int>(handles_.size()); }
  // Worker w's group: what its thread gives its MirroredStrategy. Lives as long as this.
  WorkerGroup& worker(int w);

  // Releases every worker waiting in a collective (WorkersAborted: `why`), and every later one.
  void abort(const std::string& why);
  bool aborted() const { return barrier_.aborted(); }

 private:
  class Handle;
  friend class Handle;
  // What one worker brought to the collective under way: its buffers, or its text and where
  // the gathered texts go.
  struct Slot {
    std::span<float> floats;
    std::span<double> doubles;
    const std::string* text = nullptr;
    std::vector<std::string>* gathered = nullptr;
  };
  // Worker `w` puts `slot` on the table and waits until all have; the last runs `exchange`.
  void meet(int w, const Slot& slot, const std::function<void()>& exchange);
  template <typename T>
  void sum(std::span<T> Slot::*field);

  std::vector<WorkerPlace> places_;
  std::vector<std::unique_ptr<Handle>> handles_;
  std::vector<Slot> slots_;  // written by each worker before it arrives, read by the last
  CancellableBarrier barrier_;
  mutable std::mutex why_mutex_;
  std::string why_aborted_;  // the first abort's reason
};

}  // namespace mirrorlab::vgpu
