// The controls: run, pause, one training step; and the settings of the run (devices and their
// memory limits, model, algorithm, per-replica batch, learning rate), applied by rebuilding
// the session. A setting that cannot work (a memory limit too small for the model) shows the
// core's sentence here instead of crashing.
#pragma once

#include <string>
#include <vector>

#include "gui/panel.h"

namespace mirrorlab::gui {

class ControlsPanel : public Panel {
 public:
  const char* name() const override { return "Controls"; }
  void Draw(FrameContext& frame) override;

 private:
  void draw_run_state(FrameContext& frame);
  void draw_settings(FrameContext& frame);
  void load(const core::SessionConfig& config);

  // The settings being edited (applied with the button), loaded from the last config.
  bool loaded_ = false;
  int gpus_ = 2;
  std::vector<int> memory_mib_;
  int model_ = 0;      // index into kModels
  int algorithm_ = 0;  // index into kAlgorithms
  int batch_ = 64;
  float learning_rate_ = 1e-3f;
};

}  // namespace mirrorlab::gui
