#include "gui/panels/lesson_asks.h"

#include "gui/drawing/wrapped_text.h"

namespace mirrorlab::gui {

bool shows_the_lesson_asks(const FrameContext& frame, const char* what) {
  if (!frame.view.lesson_asks) return false;
  text_wrapped(
      "%s appears here when the step runs: predict first, then \"Run the step and show me\" "
      "(or Page Down once the step's text is read).",
      what);
  return true;
}

}  // namespace mirrorlab::gui
