#include "core/strategy/cross_replica.h"

#include <stdexcept>
#include <utility>

namespace mirrorlab::core {
namespace {

std::string describe(int rank, bool departing, std::size_t count, const vgpu::PackFrame& frame) {
  std::string where;
  if (frame.packs > 1) {
    where = " (pack " + std::to_string(frame.index) + " at " + std::to_string(frame.offset) + ")";
  }
  return "replica " + std::to_string(rank) +
         (departing ? " finished its step function"
                    : " called all_reduce with " + std::to_string(count) + " values" + where);
}

}  // namespace

CrossReplicaRendezvous::CrossReplicaRendezvous(int num_replicas)
    : num_replicas_(num_replicas), arrivals_(static_cast<std::size_t>(num_replicas)) {
  reset(nullptr, nullptr);
}

void CrossReplicaRendezvous::reset(const vgpu::AllReduce* algorithm, vgpu::StepObserver* observer,
                                   std::vector<vgpu::Device*> devices) {
  std::lock_guard lock(mutex_);
  algorithm_ = algorithm;
  observer_ = observer;
  devices_ = std::move(devices);
  barrier_ = std::make_shared<vgpu::CancellableBarrier>(num_replicas_);
  group_.reset();
  aborted_ = false;
  mismatch_.clear();
}

void CrossReplicaRendezvous::abort() {
  // Abort the barrier and group outside mutex_: a meeting's completion takes mutex_ while it
  // holds the barrier's lock, so taking them in the other order could deadlock. Once aborted_ is
  // set, nobody enters the barrier or makes a group any more.
  std::shared_ptr<vgpu::CancellableBarrier> barrier;
  std::shared_ptr<vgpu::CollectiveGroup> group;
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    barrier = barrier_;
    group = group_;
  }
  barrier->abort();
  if (group) group->abort();
}

void CrossReplicaRendezvous::meet(int rank, Arrival arrival) {
  std::shared_ptr<vgpu::CancellableBarrier> barrier;
  {
    std::lock_guard lock(mutex_);
    if (aborted_) throw vgpu::CollectiveAborted();
    barrier = barrier_;
  }
  arrivals_[static_cast<std::size_t>(rank)] = arrival;
  // The last replica to arrive sees every arrival (the barrier orders the writes above) and
  // either agrees them into one collective group or writes down why they disagree.
  barrier->arrive_and_wait([this] {
    mismatch_.clear();
    const Arrival& first = arrivals_[0];
    for (int r = 1; r < num_replicas_; ++r) {
      const Arrival& a = arrivals_[static_cast<std::size_t>(r)];
      if (a.departing != first.departing || a.values.size() != first.values.size() ||
          a.frame.offset != first.frame.offset || a.frame.index != first.frame.index) {
        mismatch_ = "replicas made different collective calls: " +
                    describe(0, first.departing, first.values.size(), first.frame) + " but " +
                    describe(r, a.departing, a.values.size(), a.frame) +
                    ". Every replica must call all_reduce the same way in each step.";
        return;
      }
    }
    if (first.departing) return;
    std::vector<std::span<float>> buffers;
    for (const Arrival& a : arrivals_) buffers.push_back(a.values);
    std::lock_guard lock(mutex_);
    if (!aborted_) {
      group_ = std::make_shared<vgpu::CollectiveGroup>(std::move(buffers), algorithm_->name(),
                                                       observer_, devices_, first.frame);
    }
  });
  if (!mismatch_.empty()) throw std::logic_error(mismatch_);
}

void CrossReplicaRendezvous::all_reduce(int rank, std::span<float> values, vgpu::ReduceOp op,
                                        const std::function<void()>& met, vgpu::PackFrame frame) {
  meet(rank, Arrival{false, values, frame});
  if (met) met();
  std::shared_ptr<vgpu::CollectiveGroup> group;
  {
    std::lock_guard lock(mutex_);
    if (aborted_ || !group_) throw vgpu::CollectiveAborted();
    group = group_;
  }
  algorithm_->run_rank(rank, *group, op);
}

void CrossReplicaRendezvous::depart(int rank) { meet(rank, Arrival{true, {}, {}}); }

}  // namespace mirrorlab::core
