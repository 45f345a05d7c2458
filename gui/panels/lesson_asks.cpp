#include "gui/panels/lesson_asks.h"

#include <algorithm>
#include <vector>

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

bool is_asked(const FrameContext& frame, std::string_view value) {
  const std::vector<std::string>& asked = frame.view.asked_values;
  return frame.view.lesson_asks && std::find(asked.begin(), asked.end(), value) != asked.end();
}

bool asks_about(const FrameContext& frame, std::string_view prefix) {
  const std::vector<std::string>& asked = frame.view.asked_values;
  return frame.view.lesson_asks &&
         std::any_of(asked.begin(), asked.end(),
                     [&](const std::string& v) { return v.starts_with(prefix); });
}

std::string blank_if_asked(const FrameContext& frame, std::string_view value, std::string shown) {
  return is_asked(frame, value) ? "?" : shown;
}

const char* plural_s(const std::string& shown) { return shown == "1" ? "" : "s"; }

}  // namespace mirrorlab::gui
