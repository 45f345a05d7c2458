#include "gui/drawing/table_cells.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "gui/drawing/wrapped_text.h"

namespace mirrorlab::gui {

namespace {

// ImGui 1.86's heights: a row of one line is the text and the cell's padding above and below it.
float row_height() { return ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y; }

float header_height(float lines) {
  const ImGuiStyle& style = ImGui::GetStyle();
  return lines * ImGui::GetTextLineHeightWithSpacing() - style.ItemSpacing.y +
         2 * style.CellPadding.y;
}

}  // namespace

void table_headers_wrapped(float lines) {
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers, header_height(lines));
  const int columns = ImGui::TableGetColumnCount();
  for (int c = 0; c < columns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    const std::string_view name = ImGui::TableGetColumnName(c);
    text_wrapped_unformatted(name.substr(0, name.find("##")));
  }
}

float table_height(float header_lines, int shown) {
  return header_height(header_lines) + static_cast<float>(shown) * row_height();
}

int table_rows_that_fit(float header_lines, float room, int rows, int least) {
  const float fit = std::floor((room - header_height(header_lines)) / row_height());
  return std::clamp(static_cast<int>(std::max(fit, 0.0f)), std::min(least, rows), rows);
}

void table_scroll_to_row(int row, int shown) {
  ImGui::SetScrollY(static_cast<float>(std::max(0, row - (shown - 1) / 2)) * row_height());
}

int table_first_row_shown() {
  return static_cast<int>(std::ceil(ImGui::GetScrollY() / row_height() - 0.01f));
}

void shade_cell(ImU32 color) {
  // Drawn in the cell's own draw channel, so clipped as its text is.
  const ImGuiStyle& style = ImGui::GetStyle();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::GetWindowDrawList()->AddRectFilled(
      ImVec2(p.x - style.CellPadding.x, p.y - style.CellPadding.y),
      ImVec2(p.x + width + style.CellPadding.x,
             p.y + ImGui::GetTextLineHeight() + style.CellPadding.y),
      color);
}

}  // namespace mirrorlab::gui
