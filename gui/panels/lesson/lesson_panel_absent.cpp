// Built instead of gui/panels/lesson/lesson_panel.cpp when the lessons are not (no toml++ or md4c).
#include <stdexcept>

#include "gui/panels/lesson/lesson_panel.h"

namespace mirrorlab::gui {

std::unique_ptr<LessonPanel> make_lesson_panel(const std::string&, int, LessonPace,
                                               std::shared_ptr<const core::FashionMnist>,
                                               const core::SessionConfig&) {
  throw std::invalid_argument(
      "this build has no lessons (toml++ and md4c were not found when it was configured): "
      "install libtomlplusplus-dev libmd4c-dev (scripts/setup does) and rebuild");
}

}  // namespace mirrorlab::gui
