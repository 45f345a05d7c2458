// What a training step tells those who watch or steer it: the event store (timed phases), the
// step recorder (what the GUI draws), the step controller (pausing at phase boundaries), and
// what comes (the lesson player, fault injection). The strategy calls its listeners and knows
// none of them.
//
// Threads. begin_step() and end_step() run on the host thread while no replica runs. on_phase()
// and on_replica_reached() run on each replica's own thread. on_all_reached() and
// on_collective_step() run on one replica's thread while every other replica waits for it, so a
// listener may read every replica there, or hold them all (the controller's pause).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/strategy/events/run_event.h"
#include "core/strategy/step_boundary.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::core {

class Replica;
struct GlobalBatch;
struct Shard;

// A training step as it starts.
struct StepStart {
  std::int64_t step = 0;  // the strategy's 0-based training step
  const GlobalBatch* batch = nullptr;
  const std::vector<Shard>* shards = nullptr;  // one per replica
  std::vector<Replica*> replicas;              // in rank order
  std::string all_reduce;                      // the algorithm's name
  int all_reduce_steps = 0;                    // its steps for this many replicas, every pack's
  int packs = 1;                               // the gradient packs, each all-reduced on its own
  // Its gradient packs may be all-reduced beside backward (several packs, overlap on, a device
  // with a communication lane): they are, unless a listener needs the step's boundaries.
  bool packs_may_overlap = false;
};

// What a listener needs of a training step, asked as it starts. A step no listener needs
// anything of costs nothing more than the step itself.
struct StepNeeds {
  bool boundaries = false;    // on_replica_reached, on_all_reached, on_collective_step
  bool meetings = false;      // the replicas meet (all wait for the last) at every boundary, so
                              // that hold() can keep them there; implies boundaries
  bool fingerprints = false;  // each replica's weight fingerprint after the update
  // Boundaries where they change nothing: a step whose packs may overlap backward goes without
  // them (no listener is told of them), as without overlap it has them.
  bool boundaries_unless_overlap = false;
  StepNeeds& operator|=(const StepNeeds& other) {
    boundaries_unless_overlap |= other.boundaries_unless_overlap;
    boundaries |= other.boundaries || other.meetings;
    meetings |= other.meetings;
    fingerprints |= other.fingerprints;
    return *this;
  }
};

class StepListener {
 public:
  virtual ~StepListener() = default;

  // Before a training step's replicas start: what this listener needs of the step.
  virtual StepNeeds begin_step(const StepStart& start) {
    (void)start;
    return {};
  }
  // A phase a replica finished, timed (every phase of training and evaluation, and the initial
  // broadcast), on that replica's thread; on CUDA devices once the step's work has completed.
  virtual void on_phase(const RunEvent& event) { (void)event; }
  // Replica `replica` has finished `boundary` (never kAllReduceStep), on its own thread.
  virtual void on_replica_reached(Replica& replica, StepBoundary boundary) {
    (void)replica, (void)boundary;
  }
  // Every replica has reached `point`. When the step pauses (`point.pausing`), and always inside
  // the all-reduce, every other replica waits until this returns.
  virtual void on_all_reached(const PausePoint& point) { (void)point; }
  // In a pausing step, after every listener's on_all_reached of a point: a listener may keep the
  // replicas there until it lets go (the controller's pause). Throwing releases them, ending the
  // step with that exception.
  virtual void hold(const PausePoint& point) { (void)point; }
  // One step of the all-reduce, every rank waiting (called before on_all_reached of its point).
  virtual void on_collective_step(const vgpu::CollectiveStep& step) { (void)step; }
  // Replica `replica` has done its part of all-reduce step `index` (`phase`: "reduce-scatter",
  // ...), on its own thread, before it waits for the others. Throwing fails that replica in the
  // middle of the all-reduce, and the others are released (a fault shown: core/strategy/faults.h).
  virtual void on_collective_rank_step(Replica& replica, int index, std::string_view phase) {
    (void)replica, (void)index, (void)phase;
  }
  // After every replica finished the step, or after it failed (`completed` false).
  virtual void end_step(bool completed) { (void)completed; }
  // A replica failed in the middle of the step: release whatever this listener makes wait.
  virtual void abort_step() {}
};

}  // namespace mirrorlab::core
