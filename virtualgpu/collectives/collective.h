// All-reduce: one interface, one file per algorithm, every step observable.
//
// An all-reduce runs as one share per rank, like an NCCL kernel: every replica's device thread
// calls AllReduce::run_rank() with the same CollectiveGroup, and the ranks move chunks between
// the buffers (which all live in memory the threads can read) step by step, with a barrier
// between steps. The group assembles each step's transfers and hands the whole step to the
// observer (the GUI, a test) once every rank is done with it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "virtualgpu/collectives/transfer.h"
#include "virtualgpu/devices/barrier.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::vgpu {

class Device;
class Transport;

enum class ReduceOp { kSum, kMean };

// Where a group's buffers lie when a larger buffer is all-reduced in packs (gradient packs,
// TensorFlow's bytes_per_pack): elements [offset, offset + count) of a buffer of `whole`
// elements, pack `index` of `packs`. An algorithm whose order of addition depends on where an
// element lies (the ring's chunks) takes that place from the whole buffer, so every element is
// summed in the same rank order whatever the packs: the weights come out the same bit for bit.
struct PackFrame {
  std::size_t offset = 0;
  std::size_t whole = 0;  // 0: the group's buffers are the whole
  int index = 0;
  int packs = 1;
  int steps_before = 0;  // the earlier packs' steps: this pack's steps are numbered after them
  // CUDA devices: the all-reduce runs on each device's communication stream
  // (Device::communication_cuda_stream) instead of its own, beside the compute still queued there
  // (packs that overlap backward). The caller has made each communication stream wait for the
  // work that wrote its rank's buffer. Nothing changes on CPU-backed devices.
  bool communication_stream = false;
};

// One step of an algorithm: everything that happens between two barriers.
struct CollectiveStep {
  std::string algorithm;  // "ring", "reduce-to-one"
  int index = 0;      // 0-based, within this all-reduce (all its packs: PackFrame::steps_before)
  std::string phase;  // "reduce-scatter", "all-gather", "reduce", "broadcast"
  std::vector<Transfer> transfers;  // sorted by (dst, src, begin); elements of the whole buffer
  int pack = 0;                     // the pack being all-reduced (PackFrame), and how many
  int packs = 1;
  TimePoint start{};
  TimePoint finish{};
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Called once per step, on one of the ranks' threads, while the other ranks wait.
  virtual void on_step(const CollectiveStep& step) = 0;
  // Called on rank `rank`'s own thread as it ends its part of step `index` (`phase`), before it
  // waits for the others. What it throws fails that rank in the middle of the all-reduce (a
  // fault being shown): the rank's caller aborts the group, which releases the others.
  virtual void on_rank_step(int rank, int index, std::string_view phase) {
    (void)rank, (void)index, (void)phase;
  }
};

// The shared state of one all-reduce call: the buffers (one per rank, all the same length), the
// barrier, the transport that moves the data (chosen by the memory the buffers live in, see
// transport.h) and the step being assembled. Create one per call; not reusable across calls.
class CollectiveGroup {
 public:
  // devices[i] holds buffers[i] (host or CUDA memory); no devices: the buffers are host memory.
  // `frame`: where the buffers lie in a buffer all-reduced in packs (default: they are all of it).
  CollectiveGroup(std::vector<std::span<float>> buffers, std::string algorithm,
                  StepObserver* observer = nullptr, std::vector<Device*> devices = {},
                  PackFrame frame = {});
  ~CollectiveGroup();

  int size() const { return static_cast<int>(buffers_.size()); }
  std::size_t count() const;  // elements per buffer
  std::span<float> buffer(int rank) const { return buffers_[rank]; }
  const PackFrame& frame() const { return frame_; }
  // Part `part` of `parts` equal parts of the whole buffer (part p: [p*W/parts, (p+1)*W/parts)
  // of its W elements), as far as it lies in this group's buffers, in their elements: an empty
  // range (begin == end) where none of it does.
  std::pair<std::size_t, std::size_t> part_of_whole(std::size_t part, int parts) const;

  const std::vector<Device*>& devices() const { return devices_; }  // empty: host buffers
  // An observer watches each step: it needs their times, so each step's work is waited for.
  bool observed() const { return observer_ != nullptr; }
  // Waits on the host until every rank's queued work on its buffer is done: before host code
  // reads or writes the buffers (a whole-group step across workers), or when the group ends.
  void wait_for_devices();

  // Every rank calls begin() once before touching any buffer: no rank may read a neighbour's
  // buffer before that neighbour has finished writing it (its gradients, in training).
  void begin(int rank);
  // Performs `kind` from src's buffer into dst's buffer over [begin, end) as the work of rank
  // dst, which must be the caller, and records it in the current step.
  void transfer(int src, int dst, std::size_t begin, std::size_t end, TransferKind kind);
  // The calling rank sums the elements [begin, end) over every buffer (in rank order) and writes
  // the sum into every buffer: one read and one write of each byte (see one_shot_all_reduce.h).
  void reduce_broadcast(int rank, std::size_t begin, std::size_t end);
  // Every rank calls end_step() after its transfers of a step; the last one to arrive completes
  // the step's work (on a GPU: waits for it) and hands the assembled step (index, phase) to the
  // observer before anyone goes on. Every rank passes the same index and phase.
  void end_step(int rank, int index, std::string_view phase);
  // The same, and the last rank to arrive first runs `whole_group` once, for every rank, while
  // the others wait: for work issued for the whole group from one thread (NCCL's grouped calls).
  // It must return with that work complete; the step has no transfers (opaque), only its time.
  void end_step(int rank, int index, std::string_view phase,
                const std::function<void()>& whole_group);
  // Every rank calls finish() last: scales its buffer by 1/size for kMean.
  void finish(int rank, ReduceOp op);
  // Multiplies rank `rank`'s buffer by `factor` (the caller's), as finish() does for kMean.
  void scale(int rank, float factor);

  // Releases every waiting rank with CollectiveAborted (call it when a rank fails).
  void abort() { barrier_.abort(); }

 private:
  std::vector<std::span<float>> buffers_;
  std::string algorithm_;
  StepObserver* observer_;
  std::vector<Device*> devices_;
  PackFrame frame_;
  std::unique_ptr<Transport> transport_;
  CancellableBarrier barrier_;
  TimePoint step_start_{};
};

class AllReduce {
 public:
  virtual ~AllReduce() = default;
  virtual std::string name() const = 0;
  // Runs rank `rank`'s share, on the calling (device) thread. Every rank of the group must call
  // it concurrently. Calls group.begin(rank) first, group.end_step() after each step and
  // group.finish(rank, op) last.
  virtual void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const = 0;
  // How many steps (barriers) it takes on n ranks.
  virtual int num_steps(int n) const = 0;
  // Bytes it reads plus writes in total for n buffers of `bytes` each (its traffic model).
  virtual double bytes_moved(int n, std::size_t bytes) const = 0;
};

// The algorithms themselves, their names and their factory: all_reduce_algorithms.h.

// From the host: runs every rank's share on its device's stream and waits for all of them.
// devices[i] holds buffers[i]. Rethrows the first real error (not the CollectiveAborted of the
// ranks it released). `frame`: the buffers as a pack of a larger one (PackFrame).
void all_reduce(const std::vector<Device*>& devices, std::vector<std::span<float>> buffers,
                const AllReduce& algorithm, ReduceOp op, StepObserver* observer = nullptr,
                PackFrame frame = {});

// Waits for every device's stream, then rethrows the first real error: not the
// CollectiveAborted of the ranks that a failing rank released (unless that is all there is).
void synchronize_all(const std::vector<Device*>& devices);

}  // namespace mirrorlab::vgpu
