#include "gui/panels/step/step_moment.h"

#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "imgui.h"

namespace mirrorlab::gui {

bool has_recorded_step(const FrameContext& frame, const char* what) {
  const core::RecordedStep& record = frame.run.step_record;
  const bool recorded = frame.session != nullptr && record.step >= 0 && !record.replicas.empty();
  if (recorded) {
    fills_room();
    return true;
  }
  if (shows_the_lesson_asks(frame, what)) return false;
  fills_room();
  if (!frame.run.driven_by.empty()) {  // a watched run: its driver's keys, not the window's
    text_wrapped("%s appears here from the next step %s takes while this window watches.", what,
                 frame.run.driven_by.c_str());
    return false;
  }
  text_wrapped(
      "%s of the first step appears here: press One step (N), or Next phase "
      "(Right arrow) to walk through the step phase by phase.",
      what);
  return false;
}

ShownMoment shown_moment(const FrameContext& frame) {
  const core::RecordedStep& record = frame.run.step_record;
  const int moments = static_cast<int>(record.points.size());
  ShownMoment shown;
  if (moments == 0) return shown;
  const int watched = frame.view.watched_moment;
  shown.rewatching = watched >= 0 && watched < moments - 1;
  shown.moment = shown.rewatching ? watched : moments - 1;
  shown.progress = core::moment_progress(record, static_cast<std::size_t>(shown.moment));
  shown.label = record.points[static_cast<std::size_t>(shown.moment)].label();
  return shown;
}

int moment_after_all_reduce_step(const core::RecordedStep& record, int k) {
  for (std::size_t i = 0; i < record.points.size(); ++i) {
    const core::PausePoint& p = record.points[i];
    if (k == 0 && p.boundary == core::StepBoundary::kBackward) return static_cast<int>(i);
    if (k > 0 && p.boundary == core::StepBoundary::kAllReduceStep && p.all_reduce_step == k - 1) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void watch_moment(FrameContext& frame, int moment) {
  const int moments = static_cast<int>(frame.run.step_record.points.size());
  frame.view.watched_moment = (moment < 0 || moment >= moments - 1) ? -1 : moment;
}

}  // namespace mirrorlab::gui
