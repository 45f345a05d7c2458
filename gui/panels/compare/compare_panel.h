// Compare, in two tabs.
//
// "Measured here": the all-reduce algorithms measured side by side on the run's own devices
// (time per all-reduce and per training step as bars, algbw/busbw over a size sweep as lines),
// each beside the timing model's prediction from this machine's fit (`mirrorlab compare --fit`),
// or a sentence saying how to make one. The measurement runs on the training thread between two
// steps (training waits; drawing does not) and fills the panel as it goes. NCCL, where the
// devices cannot run it, is listed with the reason and filled in from NCCL's model on the machine
// chosen in the other tab, labelled as predicted.
//
// "Predicted on a machine": the machine view (compare_machine_view.h).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "core/session/algorithm_comparison.h"
#include "gui/model/model_predictions.h"
#include "gui/panels/compare/compare_machine_view.h"
#include "gui/panels/panel.h"

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
    std::uint64_t version = 0;  // counts the results published
    bool running = false;
    const void* session = nullptr;  // the session it was measured on
  };
  void draw_measured(FrameContext& frame);
  void draw_fit_line(FrameContext& frame);
  void draw_bars(const core::AlgorithmComparison& r, FrameContext& frame);
  // NCCL's row where it cannot run here: the model's time on the chosen machine.
  void draw_nccl_predicted(const core::AlgorithmTiming& t, std::size_t gradient_bytes,
                           FrameContext& frame);
  void draw_sweep(const core::AlgorithmComparison& r, FrameContext& frame);
  // The predictions beside what was measured, when the result or the fit changed.
  void update_predictions(const FrameContext& frame);

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  core::AlgorithmComparison result_;  // this frame's copy
  std::uint64_t result_version_ = 0;
  MeasuredPredictions predictions_;
  std::uint64_t predicted_version_ = 0, predicted_catalog_ = 0;
  std::size_t predicted_devices_ = 0;
  // NCCL on the chosen machine at the gradients' size, and what it was computed for.
  std::optional<SizePrediction> nccl_on_machine_;
  std::string nccl_machine_;
  std::uint64_t nccl_catalog_ = 0;
  std::size_t nccl_bytes_ = 0;
  MachineView machine_view_;
  int tab_shown_ = -1;  // 0: measured here, 1: predicted on a machine
};

}  // namespace mirrorlab::gui
