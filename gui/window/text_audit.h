// Text out of place in a frame, read back from what ImGui would draw (its draw data), so that a
// test can fail on it at any window size and font scale: a glyph cut by the edge of the region it
// is drawn in (a label wider than its panel, a button or a column header too narrow for its
// word), and a number broken across wrapped lines ("0." on one line and "126 ms" on the next) or
// parted from its unit. Glyphs are told from other shapes by their place in the font atlas.
//
// ImGui leaves out a glyph wholly past a clip edge, and ends a tab's or a column header's label
// that does not fit with "..." (or ellipsis): what is left of such a line is whole glyphs, so
// the frame's logged words (the full text of every item, ImGui's log) tell it: a line ending at
// its clip edge whose text is, everywhere it is logged, followed by more of a word was cut.
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
  // Lines shown only in part at their region's top or bottom edge (less than three quarters of
  // the line's height in view): half a line of glyphs reads as noise from the back of a hall.
  std::vector<std::string> in_part;
};

// `logged`: the frame's words as ImGui logged them (empty: the glyph cuts and broken numbers
// only).
TextAudit audit_text(const ImDrawData& draw_data, const ImFontAtlas& atlas,
                     const std::string& logged = "");

}  // namespace mirrorlab::gui
