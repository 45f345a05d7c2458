#include "gui/panels/lesson/clicker.h"

#include <algorithm>

namespace mirrorlab::gui {
namespace {

// Less than a pixel from the end counts as the end (scroll positions are rounded).
constexpr float kAtEdgePx = 1.0f;

}  // namespace

bool hides_below(const ColumnScroll& column) { return column.y < column.max - kAtEdgePx; }
bool hides_above(const ColumnScroll& column) { return column.y > kAtEdgePx; }

ClickerMove clicker_forward(const ClickerState& state) {
  if (std::any_of(state.columns.begin(), state.columns.end(), hides_below)) {
    return ClickerMove::kPageDown;
  }
  if (state.introduction) return ClickerMove::kCloseIntroduction;
  switch (state.stage) {
    case StepStage::kAsking:
      return ClickerMove::kRunStep;
    case StepStage::kRunning:  // its answers come in seconds: a second press must not skip them
      return ClickerMove::kNone;
    case StepStage::kDone:
      break;
  }
  return state.has_next ? ClickerMove::kNextStep : ClickerMove::kNone;
}

ClickerMove clicker_back(const ClickerState& state) {
  if (std::any_of(state.columns.begin(), state.columns.end(), hides_above)) {
    return ClickerMove::kPageUp;
  }
  if (state.introduction) return ClickerMove::kCloseIntroduction;
  return state.has_back ? ClickerMove::kBackStep : ClickerMove::kNone;
}

float paged_scroll(const ColumnScroll& column, int pages, float overlap) {
  const float page = std::max(column.shown - overlap, overlap);
  return std::clamp(column.y + static_cast<float>(pages) * page, 0.0f, std::max(column.max, 0.0f));
}

}  // namespace mirrorlab::gui
