// The Compare panel's "Predicted on a machine" tab: a chooser of the machines the timing model
// knows (the presets and this machine's fit) and, for the one chosen, two sections: "All-reduce
// by size", each algorithm's predicted time of one all-reduce by size with what NCCL's own tuning
// model picks (algorithm and protocol), and "Training step: speed-up", the run's training step
// on 1 to all of its GPUs (compare_speedup_view.h). Computed when the machine or its file
// changes, not every frame.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gui/model/model_predictions.h"
#include "gui/panels/compare/compare_speedup_view.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// The machine chooser (a combo of frame.machines, editing frame.view.model_machine), shared by
// the Compare and All-reduce panels; returns the chosen machine's entry, or nullptr when the
// window has no catalog.
const ModelMachine* choose_machine(FrameContext& frame, const char* label);

// A bar of two tabs, `labels`, the second shown while the view setting `second` holds (set by
// --topology, --speedup, a lesson's step, and by clicks): a tab the setting asks for is selected
// once, when it differs from the one last shown (`*shown`: 0 or 1), and clicks decide after.
// Calls draw(0) or draw(1) for the tab shown.
void two_tabs(const char* id, const std::vector<std::string> (&labels)[2], bool* second, int* shown,
              const std::function<void(int tab)>& draw);

class MachineView {
 public:
  // Draws into the current window; reports to `panel`.
  void Draw(FrameContext& frame, const char* panel);

 private:
  void draw_by_size(FrameContext& frame, const char* panel, const ModelMachine& machine);

  std::vector<SizePrediction> rows_;
  std::string problem_;  // why the rows could not be computed
  // The algorithms left out, each a sentence saying why (cannot_run_on_machine()), and NCCL's
  // where it cannot run: the lines under the table.
  std::string not_run_;
  std::string computed_for_;
  double computed_own_ = 0;       // the run's gradient bytes the rows were computed with
  bool scrolled_to_own_ = false;  // the table was scrolled to that row once
  std::uint64_t computed_version_ = 0;
  SpeedupView speedup_;
  int section_shown_ = -1;  // 0: by size, 1: training step
};

}  // namespace mirrorlab::gui
