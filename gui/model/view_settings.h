// Everything about how the run is shown (not what the run does), in one place: panels read it
// and the controls and menus change it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mirrorlab::gui {

struct ViewSettings {
  float font_scale = 1.0f;  // 1.5 to 2 for a projector (--font-scale, View menu)
  // The presenter layout (--present, F5): no Controls column, a lesson as a caption strip across
  // the bottom, the step's panel filling the rest.
  bool present = false;
  // There, the caption strip tall (T, --tall-lesson-text): to read a step's text and questions.
  bool tall_caption = false;
  std::string focused_panel;  // a panel's name: only it is shown, filling the window; empty: all
  std::string highlighted_panel;  // the panel a lesson's step talks about, framed in yellow
  // A lesson's step waits for the class's predictions before it runs: a panel with nothing to
  // show yet says so, not how to step a run of one's own.
  bool lesson_asks = false;
  // Then, the live values its questions ask for (lessons/player/live_values.h: "global_batch",
  // "replicas", ...): a panel shows a blank where it would show one (gui/panels/lesson_asks.h).
  std::vector<std::string> asked_values;
  int chosen_device = 0;  // the device panels highlight (and the Gradients panel's replica)
  int chosen_layer = -1;  // the layer whose gradient the Gradients panel maps (-1: the first)
  // The moment of the recorded step being shown (an index into RecordedStep::points; -1: the
  // latest, live). Left/Right walk back and forth to re-watch a step; panels draw
  // core::moment_progress(record, moment) for it.
  int watched_moment = -1;
  bool show_imgui_metrics = false;
  // A lesson's reference run (one worker of as many devices, on the same batches): the largest
  // difference between its weights and the run's, once the step that asks has run.
  std::optional<double> distance_to_one_worker;
  // The same against one device (the lesson's single-device reference run).
  std::optional<double> distance_to_one_device;

  // The timing model's machine, shown by the Compare panel's "Predicted on a machine" tab and
  // played on by the All-reduce panel's model: a preset's id or "this-machine" (--topology).
  std::string model_machine = "dgx-h100";
  bool compare_shows_machine = false;  // the Compare panel shows that tab (else what it measured)
  // That tab shows one training step of the run's model on 1 to all of the machine's GPUs, the
  // speed-up (--speedup; a lesson step that asks about it), else one all-reduce by size.
  bool compare_shows_step = false;
  // Non-empty: the All-reduce panel plays this modelled all-reduce ("nccl-ring", ...; see
  // gui/model/modelled_all_reduce.h) on model_machine instead of the run's, of modelled_bytes per
  // GPU, shown after modelled_step of its steps (0: before it). Left/Right walk those steps then.
  std::string modelled_allreduce;
  double modelled_bytes = 64.0 * (1 << 20);
  int modelled_step = 0;
};

}  // namespace mirrorlab::gui
