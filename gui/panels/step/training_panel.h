// Training: loss and accuracy per global step (and per epoch on the test set), and images per
// second: what model.fit() prints, as curves.
#pragma once

#include "gui/drawing/chart.h"
#include "gui/panels/panel.h"
#include "imgui.h"

namespace mirrorlab::gui {

class TrainingPanel : public Panel {
 public:
  const char* name() const override { return "Training"; }
  void Draw(FrameContext& frame) override;

 private:
  void follow(const core::SessionSnapshot& run);
  void draw_words(FrameContext& frame);
  void draw_charts(FrameContext& frame, ImVec2 room);
  float words_height_ = 0;  // the words under images/s, as the last frame drew them
  const void* session_ = nullptr;
  std::size_t steps_seen_ = 0, epochs_seen_ = 0;
  // Built incrementally from the snapshot: the train curves smoothed and each step's own values
  // (faint, under them: the step line below the title is one of those), epoch test points.
  ChartSeries loss_, accuracy_, loss_steps_, accuracy_steps_, val_loss_, val_accuracy_;
  double smooth_loss_ = 0, smooth_accuracy_ = 0;
};

}  // namespace mirrorlab::gui
