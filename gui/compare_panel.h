// Compare: the all-reduce algorithms measured side by side on the run's own devices: time per
// all-reduce and per training step as bars, algbw/busbw over a size sweep as lines. The
// measurement runs on the training thread between two steps (training waits; drawing does
// not) and fills the panel as it goes. NCCL is listed with the reason when the devices cannot
// run it.
#pragma once

#include <memory>
#include <mutex>

#include "core/session/algorithm_comparison.h"
#include "gui/panel.h"

namespace mirrorlab::gui {

class ComparePanel : public Panel {
 public:
  const char* name() const override { return "Compare"; }
  void Draw(FrameContext& frame) override;
  // Queues the measurement on `session`'s training thread.
  void start(core::TrainingSession& session);

 private:
  // Shared with the measuring task, which may outlive a frame (not the session: the session
  // drops or finishes its tasks before it ends).
  struct Shared {
    std::mutex mutex;
    core::AlgorithmComparison result;
    bool running = false;
    const void* session = nullptr;  // the session it was measured on
  };
  void draw_bars(const core::AlgorithmComparison& r, FrameContext& frame);
  void draw_sweep(const core::AlgorithmComparison& r, FrameContext& frame);

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace mirrorlab::gui
