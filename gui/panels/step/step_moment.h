// Which moment of the recorded step the panels show: the one being re-watched (Left/Right, the
// Controls' list, the All-reduce panel's slider) or, live, the latest. Every panel that draws
// the inside of a step asks here, so they all show the same moment.
#pragma once

#include <string>

#include "gui/panels/lesson_asks.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// Whether a step has been recorded to draw; if not, shows "`what` appears here ..." with how
// to start one, and the panel draws nothing else. The panel is a picture of the step sized to its
// room: it says it fills it (gui/drawing/content_height.h) from before its first data on, so that
// the presenter strip does not grow into it and give it back when the data comes; but while a
// lesson's step waits for the class's predictions, the panel shows only that sentence until the
// class has predicted, and leaves its room to the step's text (measured at 1280x720, font 1.5:
// lesson 1 step 1 showed two lines of its text under an empty panel of 70% of the window).
bool has_recorded_step(const FrameContext& frame, const char* what);

struct ShownMoment {
  core::MomentProgress progress;  // what of the step existed at that moment
  int moment = -1;                // index into record.points; -1: none reached yet
  bool rewatching = false;        // an earlier moment than the latest
  std::string label;              // "step 3: after backward", or "" when none
};

ShownMoment shown_moment(const FrameContext& frame);

// The moment right after the all-reduce's step `k` (1-based; 0: right before the all-reduce,
// i.e. after backward), or -1 if the record has not reached it.
int moment_after_all_reduce_step(const core::RecordedStep& record, int k);

// Shows `moment` in every panel (-1 or the latest moment: live again).
void watch_moment(FrameContext& frame, int moment);

}  // namespace mirrorlab::gui
