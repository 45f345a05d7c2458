// Text out of place in a frame, read back from what ImGui would draw (its draw data), so that a
// test can fail on it at any window size and font scale: a glyph cut by the edge of the region it
// is drawn in (a label wider than its panel, a button or a column header too narrow for its
// word), and a number broken across wrapped lines ("0." on one line and "126 ms" on the next) or
// parted from its unit. Glyphs are told from other shapes by their place in the font atlas.
#pragma once

#include <string>
#include <vector>

struct ImDrawData;
struct ImFontAtlas;

namespace mirrorlab::gui {

struct TextAudit {
  int glyphs = 0;                           // glyphs drawn in the frame
  std::vector<std::string> cut;             // the lines with a glyph cut off, as drawn
  std::vector<std::string> broken_numbers;  // "0. | 126 ms": a line's end | the next's start
};

TextAudit audit_text(const ImDrawData& draw_data, const ImFontAtlas& atlas);

}  // namespace mirrorlab::gui
