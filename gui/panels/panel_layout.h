// Which panels the window has, and where each goes. The panels are made in one list whose order
// is the window's (and that of the keys 1 to 7); the layout places them in rows to the right of
// the Controls.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// The panels in the window's order, which is also that of their keys 1 to 7.
std::vector<std::unique_ptr<Panel>> make_panels();

// "" when `name` is empty or one of `panels`, else "no such panel (did you mean ...?); the
// panels are ...": each face puts its own name for what was given before it.
std::string unknown_panel(const std::string& name,
                          const std::vector<std::unique_ptr<Panel>>& panels);
// The same as the command says it: "--panel NAME: no such panel ...".
std::string check_panel_name(const std::string& name,
                             const std::vector<std::unique_ptr<Panel>>& panels);

// A panel's place, as fractions of the area right of the controls.
struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
};

// The layout: rows of panels, each with a share of the height and each panel with a share of its
// row's width.
struct LayoutCell {
  const char* panel;
  float width;
};
struct LayoutRow {
  float height;
  std::vector<LayoutCell> cells;
};
const std::vector<LayoutRow>& layout();

// The window's parts, in pixels. The work area is the window below its menu bar.
struct PixelRect {
  float x = 0, y = 0, w = 0, h = 0;
  float area() const { return w * h; }
};
struct WindowLayout {
  PixelRect controls;            // w == 0: not shown
  PixelRect lesson;              // w == 0: no lesson
  PixelRect panels;              // the room the panels share
  bool lesson_is_strip = false;  // the lesson is a caption strip below the panels
};
// The share of the window's height a lesson's caption strip takes in the presenter layout: a
// quarter at most, so the step's panel keeps the rest of a 16:9 projector.
inline constexpr float kCaptionStripShare = 0.25f;
// Its share when tall (T, --tall-lesson-text): a step's text and questions read whole at a large
// font, the panel above still in view.
inline constexpr float kTallCaptionStripShare = 0.55f;
// The least width, in ems of the window's 16-pixel font (scaled), a step's panel needs to read
// beside the Controls and a lesson's column; a window that leaves less opens a lesson in the
// presenter layout.
inline constexpr float kLeastPanelEms = 40.0f;
// Arranges a window of `window_height` pixels whose work area is `work`. The usual layout: the
// Controls in a column on the left, a lesson (if any) in a column on the right, the panels
// between. The presenter layout (`present`): no Controls column, a lesson as a caption strip
// across the bottom taking at most kCaptionStripShare of the window (kTallCaptionStripShare when
// `tall_caption`), the panels above it; `strip_px` > 0: the strip that high instead (as
// gui/panels/strip_fit.h fitted it).
WindowLayout arrange_window(PixelRect work, float window_height, float font_scale, bool lesson,
                            bool present, bool tall_caption = false, float strip_px = 0);

// Where each present panel goes. A panel that is not there gives its room to the rest of its
// row; an empty row gives its room to the other rows.
std::vector<std::pair<std::string, Rect>> place_panels(const std::vector<std::string>& present);

}  // namespace mirrorlab::gui
