#include "gui/drawing/table_cells.h"

#include <string_view>

#include "gui/drawing/wrapped_text.h"

namespace mirrorlab::gui {

void table_headers_wrapped(float lines) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float height =
      lines * ImGui::GetTextLineHeightWithSpacing() - style.ItemSpacing.y + 2 * style.CellPadding.y;
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers, height);
  const int columns = ImGui::TableGetColumnCount();
  for (int c = 0; c < columns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    const std::string_view name = ImGui::TableGetColumnName(c);
    text_wrapped_unformatted(name.substr(0, name.find("##")));
  }
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
