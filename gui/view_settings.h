// Everything about how the run is shown (not what the run does), in one place: panels read it
// and the controls and menus change it.
#pragma once

#include <string>

namespace mirrorlab::gui {

struct ViewSettings {
  float font_scale = 1.0f;    // 1.5 to 2 for a projector (--font-scale, View menu)
  std::string focused_panel;  // a panel's name: only it is shown, filling the window; empty: all
  std::string highlighted_panel;  // the panel a lesson's step talks about, framed in yellow
  int chosen_device = 0;      // the device panels highlight (and the Gradients panel's replica)
  int chosen_layer = -1;      // the layer whose gradient the Gradients panel maps (-1: the first)
  // The moment of the recorded step being shown (an index into RecordedStep::points; -1: the
  // latest, live). Left/Right walk back and forth to re-watch a step; panels draw
  // core::moment_progress(record, moment) for it.
  int watched_moment = -1;
  bool show_imgui_metrics = false;
};

}  // namespace mirrorlab::gui
