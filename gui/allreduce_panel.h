// All-reduce: every device's gradient buffer drawn as chunks, each chunk striped with the
// colours of the replicas whose values it holds so far; for the step shown, an arrow for every
// transfer (thick with a "+" where it is added into the chunk, thin where it is copied over it)
// and the receiving chunks outlined. Ring, reduce-to-one and one-shot show their steps; NCCL is
// one opaque call with its time. The step shown follows the moment being watched; Left/Right
// or the slider step through the all-reduce, forward and back.
#pragma once

#include "gui/panel.h"

namespace mirrorlab::gui {

class AllReducePanel : public Panel {
 public:
  const char* name() const override { return "All-reduce"; }
  void Draw(FrameContext& frame) override;
};

}  // namespace mirrorlab::gui
