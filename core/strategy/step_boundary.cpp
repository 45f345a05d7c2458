#include "core/strategy/step_boundary.h"

namespace mirrorlab::core {

const char* to_string(StepBoundary boundary) {
  switch (boundary) {
    case StepBoundary::kSplit:
      return "split";
    case StepBoundary::kForward:
      return "forward";
    case StepBoundary::kBackward:
      return "backward";
    case StepBoundary::kAllReduceStep:
      return "all-reduce step";
    case StepBoundary::kUpdate:
      return "update";
  }
  return "?";
}

std::string PausePoint::label() const {
  std::string text = "step " + std::to_string(step + 1) + ": ";  // counted from 1, as said
  if (boundary != StepBoundary::kAllReduceStep) return text + "after " + to_string(boundary);
  text += "all-reduce step " + std::to_string(all_reduce_step + 1) + " of " +
          std::to_string(all_reduce_steps);
  if (!all_reduce_phase.empty()) text += " (" + all_reduce_phase + ")";
  return text;
}

}  // namespace mirrorlab::core
