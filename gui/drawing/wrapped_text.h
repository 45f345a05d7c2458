// A sentence wrapped at the right edge of the region it is drawn in, at spaces only, with a
// number kept beside its unit: ImGui's own wrapping (TextWrapped, or Text under PushTextWrapPos)
// also breaks after a '.' or ',', which cut "0.126 ms" into "0." and "126 ms" on a projector.
// Panels write their sentences with these; the window's text audit (gui/window/text_audit.h) checks
// it.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/session/text/formatted_text.h"
#include "imgui.h"

namespace mirrorlab::gui {

// The pieces a sentence may be broken between: its words, a number with the unit after it as
// one ("13.3 ms"), each with the spaces that follow it.
std::vector<std::string_view> wrap_pieces(std::string_view text);

// printf into a string, as long as it needs: for a sentence built before it is drawn (or
// measured).
using core::formatted;

void text_wrapped_unformatted(std::string_view text);
void text_wrapped(const char* fmt, ...) IM_FMTARGS(1);
// Draws `word` (with the spaces after it) after the item before, unless `first`: beside it, or at
// `left` on a new line when it would pass `right` (window coordinates) or leave no room for the
// `then` pixels that must follow it on its line; never on a new line unless `may_break`.
void place_word(std::string_view word, float left, float right, bool first, float then = 0,
                bool may_break = true);

// One line of text at the cursor, left out (its room kept) where the window would show it only in
// part: half a line of glyphs at a panel's or a column's edge reads as noise on a projector.
void text_line(std::string_view text);

// The first of `labels` whose text is at most `width` wide (the last when none is): a label's
// longer or shorter form by the room there is.
std::string first_that_fits(std::initializer_list<std::string> labels, float width);
std::string first_that_fits(std::span<const std::string> labels, float width);

// How many lines `text` takes wrapped at `width` (0 for none): room to keep for it below a
// picture or a table.
float wrapped_line_count(const std::string& text, float width);

// After an item: the next, `width` wide, goes beside it where it fits, else on a new line.
void next_beside_if_fits(float width);

// The same in the disabled (dim) colour.
void text_wrapped_dim(const char* fmt, ...) IM_FMTARGS(1);

}  // namespace mirrorlab::gui
