#include "gui/drawing/wrapped_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>

#include "core/session/text/console_text.h"
#include "imgui_internal.h"

namespace mirrorlab::gui {
namespace {

bool is_number(std::string_view word) {
  while (!word.empty() && (word.back() == ' ' || word.back() == ',' || word.back() == ';')) {
    word.remove_suffix(1);
  }
  if (!word.empty() && (word.front() == '(' || word.front() == '-' || word.front() == '+')) {
    word.remove_prefix(1);
  }
  if (word.empty() || !std::isdigit(static_cast<unsigned char>(word.front()))) return false;
  for (char c : word) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != ',' && c != 'e' &&
        c != '-' && c != 'x') {
      return false;
    }
  }
  return true;
}

bool is_unit(std::string_view word) {
  for (const char* unit : {"ms", "\xC2\xB5s", "us", "ns", "s", "MiB", "KiB", "GiB", "B", "bytes",
                           "%", "images/s", "GB/s", "TFLOP/s"}) {
    const std::string_view u(unit);
    if (word.substr(0, u.size()) == u &&
        (word.size() == u.size() || !std::isalnum(static_cast<unsigned char>(word[u.size()])))) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string_view> wrap_pieces(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(' ', at);
    end = end == std::string_view::npos ? text.size() : text.find_first_not_of(' ', end);
    if (end == std::string_view::npos) end = text.size();
    words.push_back(text.substr(at, end - at));
    at = end;
  }
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i + 1 < words.size() && is_number(words[i]) && words[i].back() == ' ' &&
        is_unit(words[i + 1])) {
      pieces.push_back(
          text.substr(words[i].data() - text.data(), words[i].size() + words[i + 1].size()));
      ++i;
    } else {
      pieces.push_back(words[i]);
    }
  }
  return pieces;
}

void text_wrapped_unformatted(std::string_view text) {
  // After a SameLine that left little room: start on a line of its own.
  if (ImGui::GetContentRegionAvail().x < 3 * ImGui::GetFontSize()) ImGui::NewLine();
  const float left = ImGui::GetCursorPosX();
  const float right = left + ImGui::GetContentRegionAvail().x;
  bool first = true;
  // A number glued to its unit that is wider than a whole line goes back to being two words.
  std::vector<std::string_view> pieces;
  for (std::string_view piece : wrap_pieces(text)) {
    const std::size_t space = piece.find(' ');
    if (space != std::string_view::npos && space + 1 < piece.size() &&
        piece.find_first_not_of(' ', space) != std::string_view::npos &&
        ImGui::CalcTextSize(piece.data(), piece.data() + piece.size()).x > right - left) {
      const std::size_t second = piece.find_first_not_of(' ', space);
      pieces.push_back(piece.substr(0, second));
      pieces.push_back(piece.substr(second));
    } else {
      pieces.push_back(piece);
    }
  }
  // A word wider than a whole line (TF_CONFIG's JSON, "reduce-to-one" heading a narrow column)
  // is broken at the line's edge, after a ',', ':' or '-' where one is near.
  std::vector<std::string_view> fitted;
  const float line = std::max(right - left, ImGui::GetFontSize());  // a region of no width: one em
  for (std::string_view piece : pieces) {
    while (piece.size() > 1 &&
           ImGui::CalcTextSize(piece.data(), piece.data() + piece.size()).x > line) {
      std::size_t fit = 1;
      while (fit < piece.size() &&
             ImGui::CalcTextSize(piece.data(), piece.data() + fit + 1).x <= line) {
        ++fit;
      }
      fit = core::character_boundary(piece, fit);  // not inside a character
      if (fit == 0) {  // one character wider than the line: that character whole
        fit = 1;
        while (fit < piece.size() && core::continues_character(piece[fit])) ++fit;
      }
      const std::size_t punctuation = piece.substr(0, fit).find_last_of(",:-");
      if (punctuation != std::string_view::npos && punctuation > fit / 2) fit = punctuation + 1;
      fit = std::min(fit, piece.size() - 1);
      fitted.push_back(piece.substr(0, fit));
      piece.remove_prefix(fit);
    }
    fitted.push_back(piece);
  }
  for (std::string_view piece : fitted) {
    place_word(piece, left, right, first);
    first = false;
  }
  if (first) ImGui::NewLine();
}

void place_word(std::string_view word, float left, float right, bool first, float then,
                bool may_break) {
  std::string_view shown = word;
  while (!shown.empty() && shown.back() == ' ') shown.remove_suffix(1);  // measured without
  const float width = ImGui::CalcTextSize(shown.data(), shown.data() + shown.size()).x + then;
  if (!first) {
    ImGui::SameLine(0, 0);
    if (may_break && ImGui::GetCursorPosX() + width > right && ImGui::GetCursorPosX() > left) {
      ImGui::NewLine();
      ImGui::SetCursorPosX(left);
    }
  }
  text_line(word);
}

namespace {

// Whether a line of text at the cursor would show only in part, at the window's top or bottom.
bool shown_in_part() {
  const ImRect& clip = ImGui::GetCurrentWindow()->ClipRect;
  const float top = ImGui::GetCursorScreenPos().y, bottom = top + ImGui::GetTextLineHeight();
  return (top < clip.Min.y - 0.5f && bottom > clip.Min.y) ||
         (bottom > clip.Max.y + 0.5f && top < clip.Max.y);
}

}  // namespace

void text_line(std::string_view text) {
  // A line the window would show only in part is left out, its room kept: at a panel's or a
  // column's edge half a line of glyphs reads as noise from the back of a hall, and a page on
  // (the window less a line) shows that line whole.
  if (shown_in_part()) {
    ImGui::Dummy(ImVec2(ImGui::CalcTextSize(text.data(), text.data() + text.size()).x,
                        ImGui::GetTextLineHeight()));
    return;
  }
  ImGui::TextUnformatted(text.data(), text.data() + text.size());
}

std::string first_that_fits(std::initializer_list<std::string> labels, float width) {
  return first_that_fits(std::span<const std::string>(labels.begin(), labels.size()), width);
}

std::string first_that_fits(std::span<const std::string> labels, float width) {
  for (const std::string& label : labels) {
    if (ImGui::CalcTextSize(label.c_str()).x <= width) return label;
  }
  return labels.back();
}

float wrapped_line_count(const std::string& text, float width) {
  if (text.empty()) return 0;
  return std::ceil(ImGui::CalcTextSize(text.c_str(), nullptr, false, width).y /
                   ImGui::GetTextLineHeight());
}

void next_beside_if_fits(float width) {
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < width) ImGui::NewLine();
}

void text_wrapped(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string text = core::vformatted(fmt, args);
  va_end(args);
  text_wrapped_unformatted(text);
}

void text_wrapped_dim(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string text = core::vformatted(fmt, args);
  va_end(args);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  text_wrapped_unformatted(text);
  ImGui::PopStyleColor();
}

}  // namespace mirrorlab::gui
