// The Compare panel's "Predicted on a machine" tab: a chooser of the machines the timing model
// knows (the presets and this machine's fit) and, for the one chosen, each algorithm's predicted
// time of one all-reduce by size, with what NCCL's own tuning model picks (algorithm and
// protocol). Computed when the machine or its file changes, not every frame.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gui/model_predictions.h"
#include "gui/panel.h"

namespace mirrorlab::gui {

// The machine chooser (a combo of frame.machines, editing frame.view.model_machine), shared by
// the Compare and All-reduce panels; returns the chosen machine's entry, or nullptr when the
// window has no catalog.
const ModelMachine* choose_machine(FrameContext& frame, const char* label);

class MachineView {
 public:
  // Draws into the current window; reports to `panel`.
  void Draw(FrameContext& frame, const char* panel);

 private:
  std::vector<SizePrediction> rows_;
  std::string problem_;  // why the rows could not be computed
  std::string computed_for_;
  std::uint64_t computed_version_ = 0;
};

}  // namespace mirrorlab::gui
