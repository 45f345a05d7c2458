// Where replicas, each running its step function on its own device thread, meet for an
// all-reduce of buffers that each of them brings (TensorFlow's cross-replica context).
//
// Every replica must make the same sequence of collective calls in a step. A replica that
// finishes its step function while another waits in an all-reduce would leave that one waiting
// for ever; instead, finishing is itself a meeting (depart()), and a mismatch is an error for
// every replica, with a sentence that says which replica did what.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/devices/barrier.h"

namespace mirrorlab::core {

class CrossReplicaRendezvous {
 public:
  explicit CrossReplicaRendezvous(int num_replicas);

  // Host thread, before each strategy.run(), while no replica runs: a fresh barrier (an aborted
  // one stays aborted), the algorithm and observer to use, and the replicas' devices (their
  // memory decides how the all-reduce moves data: host loops, or CUDA copies and kernels).
  void reset(const vgpu::AllReduce* algorithm, vgpu::StepObserver* observer,
             std::vector<vgpu::Device*> devices = {});
  // Replica `rank` on its device thread: all-reduces `values` with the other replicas' buffers.
  // `met` (optional) is called once every replica has arrived, before the data moves: what
  // came before was waiting for the others. `frame`: where `values` lie in a buffer all-reduced
  // pack by pack (every replica gives the same).
  void all_reduce(int rank, std::span<float> values, vgpu::ReduceOp op,
                  const std::function<void()>& met = {}, vgpu::PackFrame frame = {});
  // Replica `rank` has returned from its step function.
  void depart(int rank);
  // A replica failed: release everyone waiting with vgpu::CollectiveAborted.
  void abort();

 private:
  struct Arrival {
    bool departing = false;
    std::span<float> values;
    vgpu::PackFrame frame;
  };
  void meet(int rank, Arrival arrival);

  const int num_replicas_;
  const vgpu::AllReduce* algorithm_ = nullptr;
  vgpu::StepObserver* observer_ = nullptr;
  std::vector<vgpu::Device*> devices_;
  std::mutex mutex_;  // guards barrier_, group_ and aborted_ against abort() from any thread
  std::shared_ptr<vgpu::CancellableBarrier> barrier_;
  std::shared_ptr<vgpu::CollectiveGroup> group_;
  bool aborted_ = false;
  std::vector<Arrival> arrivals_;
  std::string mismatch_;  // set by the meeting's completion when the replicas disagree
};

}  // namespace mirrorlab::core
