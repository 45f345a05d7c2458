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

// Shades the current cell, one line of text tall, in `color`; before the cell's text.
void shade_cell(ImU32 color);

}  // namespace mirrorlab::gui
