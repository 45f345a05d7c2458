#include "gui/drawing/lesson_text.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "gui/drawing/colors.h"
#include "gui/drawing/wrapped_text.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

constexpr std::uint32_t kCodeRgb = 0xF0C674;      // code: warm yellow on the dark panels
constexpr std::uint32_t kEmphasisRgb = 0x8FC7FF;  // emphasis: light blue (no italic face loaded)
constexpr std::uint32_t kQuoteRgb = 0xB0B0B0;

constexpr float kIndentEms = 1.2f;  // of a list's items and a quote

// The face of a run: bold, monospaced, or the current one (nullptr).
ImFont* font_of(const lessons::TextRun& run, const TextFonts& fonts) {
  return run.style == lessons::RunStyle::kStrong ? fonts.bold
         : run.style == lessons::RunStyle::kCode ? fonts.mono
                                                 : nullptr;
}

// The width of what follows run `r`'s last word with no space between: the next run's first
// word, and where that run is one word touching the run after it, that run's first word too, and
// so on ("(" then `CollectiveAllReduce` then ","): a line breaks before them all, not between.
float touching_after(const std::vector<lessons::TextRun>& runs, std::size_t r,
                     const TextFonts& fonts) {
  float width = 0;
  for (std::size_t k = r + 1; k < runs.size(); ++k) {
    const std::string_view text = runs[k].text;
    if (text.empty() || text.front() == ' ') break;
    const std::size_t word = std::min(text.find(' '), text.size());
    ImFont* font = font_of(runs[k], fonts);
    if (font != nullptr) ImGui::PushFont(font);
    width += ImGui::CalcTextSize(text.data(), text.data() + word).x;
    if (font != nullptr) ImGui::PopFont();
    if (word < text.size()) break;
  }
  return width;
}

// Draws `runs` from the cursor, wrapping at the content region's right edge; continued lines
// start at `left` (window coordinates).
void draw_runs(const std::vector<lessons::TextRun>& runs, const TextFonts& fonts, float left) {
  const float right = ImGui::GetWindowContentRegionMax().x;
  bool first = true;
  bool glued = false;  // the word before ended its run with no space: this one stays beside it
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const lessons::TextRun& run = runs[r];
    const float then = touching_after(runs, r, fonts);
    ImFont* font = font_of(run, fonts);
    if (font != nullptr) ImGui::PushFont(font);
    const bool coloured =
        run.style == lessons::RunStyle::kCode || run.style == lessons::RunStyle::kEmphasis;
    if (coloured) {
      ImGui::PushStyleColor(ImGuiCol_Text,
                            rgb(run.style == lessons::RunStyle::kCode ? kCodeRgb : kEmphasisRgb));
    }
    const std::string_view text = run.text;
    std::size_t at = 0;
    while (at < text.size()) {
      // A word and the spaces after it, so a line never starts with a space.
      std::size_t end = text.find(' ', at);
      end = end == std::string_view::npos ? text.size() : text.find_first_not_of(' ', end);
      if (end == std::string_view::npos) end = text.size();
      const bool last = end == text.size() && text.back() != ' ';
      place_word(text.substr(at, end - at), left, right, first, last ? then : 0, !glued);
      first = false;
      glued = false;
      at = end;
    }
    glued = !text.empty() && text.back() != ' ';
    if (coloured) ImGui::PopStyleColor();
    if (font != nullptr) ImGui::PopFont();
  }
  if (first) ImGui::NewLine();  // an empty paragraph still takes its line
}

// A code block, monospaced and never cut: lines wider than the room wrap (wrap_code_lines).
void draw_code(const std::string& code, const TextFonts& fonts, float indent) {
  if (fonts.mono != nullptr) ImGui::PushFont(fonts.mono);
  ImGui::PushStyleColor(ImGuiCol_Text, rgb(kCodeRgb));
  ImGui::Indent(indent);
  const float column = ImGui::CalcTextSize("M").x;
  const int room = static_cast<int>(ImGui::GetContentRegionAvail().x / column);
  // A line at a time, so that one the column would show only in part is left out; no spacing
  // between them but after the last, as one block of text.
  const std::vector<std::string> lines = wrap_code_lines(code, room);
  const ImVec2 spacing = ImGui::GetStyle().ItemSpacing;
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(spacing.x, 0));
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (k + 1 == lines.size()) ImGui::PopStyleVar();
    text_line(lines[k]);
  }
  if (lines.empty()) ImGui::PopStyleVar();
  ImGui::Unindent(indent);
  ImGui::PopStyleColor();
  if (fonts.mono != nullptr) ImGui::PopFont();
}

}  // namespace

std::vector<std::string> wrap_code_lines(std::string_view code, int columns) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= code.size()) {
    std::size_t end = code.find('\n', at);
    if (end == std::string_view::npos) end = code.size();
    std::string_view line = code.substr(at, end - at);
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::size_t width = static_cast<std::size_t>(std::max(columns, 8));
    std::string lead;  // what a continued line starts with
    while (lead.size() + line.size() > width) {
      const std::size_t room = width - lead.size();
      // Break after the last space, comma, '(' or '.' that leaves something on both sides.
      std::size_t cut = line.find_last_of(" ,(.", room - 1);
      const std::size_t least = lead.empty() ? indent + 1 : 1;
      if (cut == std::string_view::npos || cut < least) cut = room - 1;
      std::string piece = lead + std::string(line.substr(0, cut + 1));
      piece.erase(piece.find_last_not_of(' ') + 1);
      out.push_back(std::move(piece));
      line.remove_prefix(cut + 1);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (lead.empty()) lead.assign(std::min(indent + 4, width / 2), ' ');
    }
    out.push_back(lead + std::string(line));
    at = end + 1;
  }
  return out;
}

float widest_word(const std::vector<lessons::Paragraph>& paragraphs, const TextFonts& fonts) {
  float widest = 0;
  for (const lessons::Paragraph& p : paragraphs) {
    if (p.kind == lessons::ParagraphKind::kCodeBlock) continue;
    const float indent =
        p.kind == lessons::ParagraphKind::kParagraph ? 0 : ImGui::GetFontSize() * kIndentEms;
    for (const lessons::TextRun& run : p.runs) {
      ImFont* font = font_of(run, fonts);
      if (font != nullptr) ImGui::PushFont(font);
      const std::string_view text = run.text;
      for (std::size_t at = text.find_first_not_of(' '); at != std::string_view::npos;) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        const std::string_view word = text.substr(at, end - at);
        widest = std::max(widest,
                          indent + ImGui::CalcTextSize(word.data(), word.data() + word.size()).x);
        at = text.find_first_not_of(' ', end);
      }
      if (font != nullptr) ImGui::PopFont();
    }
  }
  return widest;
}

void draw_paragraphs(const std::vector<lessons::Paragraph>& paragraphs, const TextFonts& fonts) {
  int number = 0;
  for (const lessons::Paragraph& p : paragraphs) {
    number = p.kind == lessons::ParagraphKind::kNumbered ? number + 1 : 0;
    const float indent = ImGui::GetFontSize() * kIndentEms;
    switch (p.kind) {
      case lessons::ParagraphKind::kParagraph:
        draw_runs(p.runs, fonts, ImGui::GetCursorPosX());
        break;
      case lessons::ParagraphKind::kBullet:
      case lessons::ParagraphKind::kNumbered: {
        const float left = ImGui::GetCursorPosX();
        if (p.kind == lessons::ParagraphKind::kBullet) {
          ImGui::Bullet();
        } else {
          ImGui::Text("%d.", number);
        }
        ImGui::SameLine(left + indent);
        draw_runs(p.runs, fonts, left + indent);
        break;
      }
      case lessons::ParagraphKind::kQuote:
        ImGui::Indent(indent);
        ImGui::PushStyleColor(ImGuiCol_Text, rgb(kQuoteRgb));
        draw_runs(p.runs, fonts, ImGui::GetCursorPosX());
        ImGui::PopStyleColor();
        ImGui::Unindent(indent);
        break;
      case lessons::ParagraphKind::kCodeBlock:
        draw_code(p.plain(), fonts, indent);
        break;
    }
    // Items of one list sit together; other paragraphs get a little air.
    if (p.kind == lessons::ParagraphKind::kParagraph || p.kind == lessons::ParagraphKind::kQuote ||
        p.kind == lessons::ParagraphKind::kCodeBlock) {
      ImGui::Spacing();
    }
  }
}

}  // namespace mirrorlab::gui
