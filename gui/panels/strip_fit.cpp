#include "gui/panels/strip_fit.h"

#include <algorithm>
#include <cmath>

namespace mirrorlab::gui {

float StripFit::next(const StripMeasure& m) {
  const float room = m.total - m.strip;
  // The panels' need following their room pixel for pixel: they fill it, whatever its height.
  if (last_room_ >= 0 && std::abs(room - last_room_) >= 1 &&
      std::abs((m.panels_need - last_panels_need_) - (room - last_room_)) < 1) {
    panels_fill_ = true;
  }
  last_room_ = room;
  last_panels_need_ = m.panels_need;
  if (m.strip_need <= 0 || turns_ >= kMostStripTurns) return fitted_;
  // Panels that fill their room need what they are given: the share's room (or more, when a
  // panel beside them needs it), or while a step asks, panels_least.
  float panels_need = m.panels_need;
  if (panels_fill_) {
    panels_need = m.panels_least > 0 ? m.panels_least : std::max(m.panels_need, m.total - m.base);
  }
  float spare = m.total - panels_need;  // the strip's height were the panels to show whole
  // A few pixels a panel leaves below what it sized to its window are not room to read in.
  if (spare > m.strip && spare < m.strip + m.line) spare = m.strip;
  float fitted = m.base;
  if (m.strip_need > m.base) {
    fitted = std::min(m.strip_need, std::max(m.base, spare));
  } else if (spare < m.base) {
    fitted = std::max(m.strip_need, spare);
  }
  // The panels keep a quarter, unless they were measured to need less and do not fill their
  // room (a panel holding one sentence while the step asks): then they keep what shows them whole.
  float most = std::max(m.base, kMostCaptionStripShare * m.total);
  if (m.panels_need > 0 && !panels_fill_) most = std::max(most, spare);
  fitted = std::min(fitted, most);
  // A pixel or so is rounding (a column's scroll bar coming or going), not a new need.
  if (std::abs(fitted - m.strip) < 1.5f) return fitted_;
  const int direction = fitted > m.strip ? 1 : -1;
  if (last_direction_ != 0 && direction != last_direction_) ++turns_;
  last_direction_ = direction;
  fitted_ = fitted;
  ++refits_;
  return fitted_;
}

}  // namespace mirrorlab::gui
