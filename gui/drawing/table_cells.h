// What the panels' tables share beyond ImGui's own: headers that wrap instead of being cut, and
// a cell shaded in a way that stays inside the cell when the rows scroll under a frozen header
// (ImGui 1.86's TableSetBgColor paints such a row's cells over the header).
#pragma once

#include "imgui.h"

namespace mirrorlab::gui {

// A table's header row with each column's label wrapped in the column's width, on as many lines
// as it needs (ImGui's own headers cut a label that is too wide to "reduce-to-..."). After the
// table's TableSetupColumn calls, in place of TableHeadersRow. `lines`: the most any label takes.
void table_headers_wrapped(float lines = 1);

// A table whose rows scroll under its header, shown in whole rows: a row half under the header or
// half off the table's foot is a row nobody at the back of a hall can read. The height of a header
// of `header_lines` (table_headers_wrapped's, or 1 for TableHeadersRow) and `shown` one-line rows;
// how many of `rows` fit in `room`, at least `least` of them (fewer only where there are fewer).
float table_height(float header_lines, int shown);
int table_rows_that_fit(float header_lines, float room, int rows, int least);
// Inside such a table (after BeginTable), once: scroll it so that row `row` (from 0) is in the
// middle of the `shown` rows, a whole row at each edge. Applied from the next frame, as ImGui's
// scrolling is.
void table_scroll_to_row(int row, int shown);
// Inside such a table: the first row (from 0) its scrolling shows whole.
int table_first_row_shown();

// Shades the current cell, one line of text tall, in `color`; before the cell's text.
void shade_cell(ImU32 color);

}  // namespace mirrorlab::gui
