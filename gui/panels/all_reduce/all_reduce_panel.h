// All-reduce: every device's gradient buffer drawn as chunks, each chunk striped with the
// colours of the replicas whose values it holds so far; for the step shown, an arrow for every
// transfer (thick with a "+" where it is added into the chunk, thin where it is copied over it)
// and the receiving chunks outlined. Ring, reduce-to-one and one-shot show their steps; NCCL is
// one opaque call with its time. The step shown follows the moment being watched; Left/Right
// or the slider step through the all-reduce, forward and back.
//
// Or, chosen at the top, the timing model's all-reduce on a machine (NCCL's Ring, Tree, NVLS or
// mirrorlab's algorithms, on a preset or this machine's fit), step by step: see
// gui/panels/all_reduce/all_reduce_model_view.h.
#pragma once

#include <cstdint>
#include <vector>

#include "gui/panels/all_reduce/all_reduce_model_view.h"
#include "gui/panels/panel.h"
#include "virtualgpu/collectives/collective_replay.h"

namespace mirrorlab::gui {

inline constexpr const char* kAllReducePanelName = "All-reduce";

class AllReducePanel : public Panel {
 public:
  const char* name() const override { return kAllReducePanelName; }
  void Draw(FrameContext& frame) override;

 private:
  // The line saying what is shown, the slider over the all-reduce's steps and what the shown
  // step does; returns how many of the steps are shown done.
  int draw_heading(FrameContext& frame, std::size_t count);
  // contributions_ after `done` steps of the recorded all-reduce on `count` elements.
  void replay(const FrameContext& frame, std::size_t count, int done);
  // The run's all-reduce, or the model's.
  void draw_the_run(FrameContext& frame);

  AllReduceModelView model_view_;
  // Whose values each chunk of each buffer holds after the steps shown (vgpu::replay_...).
  std::vector<std::vector<vgpu::ChunkContributors>> contributions_;
  const void* replayed_session_ = nullptr;
  std::uint64_t replayed_version_ = 0;
  int replayed_steps_ = -1;
};

}  // namespace mirrorlab::gui
