// The controls: run, pause, one training step; and the settings of the run (devices and their
// memory limits, model, algorithm, per-replica batch, learning rate), applied by rebuilding
// the session. A setting that cannot work (a memory limit too small for the model) shows the
// core's sentence here instead of crashing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// Within a step, for the buttons and the arrow keys alike. Forward: when re-watching an earlier
// moment, the next recorded one; at the live moment, the run's next phase (starting a step that
// pauses at its phases if none is under way), unless `run_may_move` is false (a lesson's step
// waiting for predictions): then only what was recorded. Back: the moment before the one shown.
void watch_forward(FrameContext& frame, bool run_may_move = true);
void watch_back(FrameContext& frame);

class ControlsPanel : public Panel {
 public:
  const char* name() const override { return "Controls"; }
  void Draw(FrameContext& frame) override;

 private:
  void draw_run_state(FrameContext& frame);
  void draw_settings(FrameContext& frame);
  void draw_watched_settings(FrameContext& frame);  // a run trained elsewhere: read only
  void draw_within_step(FrameContext& frame);
  // gui/panels/controls/controls_faults.cpp: the faults to inject, and saving and loading a
  // checkpoint.
  void draw_faults(FrameContext& frame);
  void draw_checkpoint(FrameContext& frame);
  void load_faults(const core::FaultPlan& plan);  // the first fault of each kind
  void load(const core::SessionConfig& config);

  // The settings being edited (applied with the button), loaded from the last config.
  bool loaded_ = false;
  std::uint64_t loaded_for_ = 0;  // FrameContext::run_id of the run they were loaded from
  int gpus_ = 2;
  std::vector<int> memory_mib_;
  int model_ = 0;      // index into kModels
  int algorithm_ = 0;  // index into the all-reduce choices (auto, then the table's algorithms)
  int batch_ = 64;
  float learning_rate_ = 1e-3f;
  int pack_kib_ = 0;         // bytes_per_pack in KiB; 0: one buffer (or num_packs' count)
  int loaded_pack_kib_ = 0;  // as loaded: a change replaces a count of packs by the size
  bool overlap_ = true;
  // The faults being edited (-1: no device), applied with their button.
  int slow_device_ = -1;
  float slow_factor_ = 3.0f;
  int fail_device_ = -1, fail_step_ = 0, fail_phase_ = 3;  // phase: index into kFailurePhases
  int nan_device_ = -1, nan_step_ = 0;
  char checkpoint_folder_[256] = "mirrorlab-checkpoints";
};

}  // namespace mirrorlab::gui
