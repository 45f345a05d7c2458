// The All-reduce panel's model: an all-reduce the timing model plays step by step on a machine
// (NCCL's Ring, Tree or NVLS, or mirrorlab's own algorithms; gui/model/modelled_all_reduce.h), as
// the panel plays the run's real all-reduce: the machine's GPUs and links
// (gui/drawing/topology_picture.h), the bytes each link carries in the step shown, each step's time
// from timing::estimate() with its busiest resource named, and Left/Right (or the slider) to step
// forward and back. It is the model, not a run, and says so at the top. Recomputed only when the
// machine, the algorithm or the size changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gui/model/modelled_all_reduce.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// Whether Left/Right walk the modelled all-reduce's steps rather than the run's moments: a model
// is shown in the All-reduce panel and the panel is on screen.
bool arrows_walk_the_model(const ViewSettings& view, const char* allreduce_panel);

class AllReduceModelView {
 public:
  // Draws into the current window; reports to `panel`.
  void Draw(FrameContext& frame, const char* panel);

 private:
  // The machine's algorithms and the chosen one's model, when what they depend on changed.
  void update(const FrameContext& frame, const ModelMachine& machine);
  void draw_controls(FrameContext& frame, int steps);
  void draw_step_strip(FrameContext& frame, int shown);
  void draw_loads(const timing::StepEstimate& step, FrameContext& frame, const char* panel);

  std::vector<ModelledAlgorithm> algorithms_;
  std::optional<ModelledAllReduce> model_;
  std::string problem_;
  std::string for_machine_, for_algorithm_;
  double for_bytes_ = 0;
  std::uint64_t for_version_ = 0;
};

}  // namespace mirrorlab::gui
