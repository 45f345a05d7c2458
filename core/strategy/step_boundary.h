// The moments of a training step: the boundaries after its phases, where all replicas can be
// seen together (and held), and how a step stopped by its viewer ends.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {

// Where within a training step all replicas can stop: after the named phase.
enum class StepBoundary { kSplit, kForward, kBackward, kAllReduceStep, kUpdate };
const char* to_string(StepBoundary boundary);  // "split", "forward", ..., "all-reduce step"

// One moment of a step that every replica has reached.
struct PausePoint {
  std::int64_t step = 0;  // the strategy's 0-based training step
  StepBoundary boundary = StepBoundary::kSplit;
  int all_reduce_step = -1;      // kAllReduceStep: 0-based step of the all-reduce
  int all_reduce_steps = 0;      // kAllReduceStep: steps the all-reduce takes in all
  std::string all_reduce_phase;  // kAllReduceStep: "reduce-scatter", "broadcast", ...
  vgpu::TimePoint time{};        // when the last replica arrived
  // The step meets at every boundary (a listener pauses it): every other replica waits while
  // the listeners see this point, and it may be held here. False: the others may have gone on.
  bool pausing = false;
  // "step 12: after backward", "step 12: all-reduce step 2 of 4 (reduce-scatter)": the step
  // counted from 1, as every sentence counts them (step is 0-based)
  std::string label() const;
};

// How a paused run ends when the viewer stops it (closing the window): training steps throw it
// out of strategy.run() / fit(). A session treats it as a clean stop, not as a failure.
class StepStopped : public std::runtime_error {
 public:
  StepStopped() : std::runtime_error("training stopped by the viewer") {}
};

}  // namespace mirrorlab::core
