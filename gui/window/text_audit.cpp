#include "gui/window/text_audit.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "imgui.h"

namespace mirrorlab::gui {
namespace {

// One glyph as drawn: its quad, its character, where its line starts and how high the line is.
struct DrawnGlyph {
  float x0, y0, x1, y1;
  unsigned codepoint;
  bool clipped;    // part of it is cut off (by the draw command's clip or a finer one)
  float line_top;  // the top of its line of text
  float line_height;
  int list;  // which draw list (window) it is in
  ImVec4 clip;
  int item;  // glyphs drawn together, with no other shape between them, share an item
};

struct AtlasGlyph {
  const ImFontGlyph* glyph;
  const ImFont* font;
};

// The atlas' glyphs by their texture rows (V0, V1) and left or right edge (U0 or U1): a glyph cut
// by a fine clip keeps its rows and one of its edges.
class GlyphIndex {
 public:
  explicit GlyphIndex(const ImFontAtlas& atlas) {
    for (const ImFont* font : atlas.Fonts) {
      for (const ImFontGlyph& g : font->Glyphs) {
        if (!g.Visible) continue;
        by_left_[key(g.V0, g.V1, g.U0)] = {&g, font};
        by_right_[key(g.V0, g.V1, g.U1)] = {&g, font};
      }
    }
  }
  const AtlasGlyph* find(const ImVec2& uv0, const ImVec2& uv1) const {
    if (auto it = by_left_.find(key(uv0.y, uv1.y, uv0.x)); it != by_left_.end()) return &it->second;
    if (auto it = by_right_.find(key(uv0.y, uv1.y, uv1.x)); it != by_right_.end()) {
      return &it->second;
    }
    return nullptr;
  }

 private:
  using Key = std::tuple<long, long, long>;
  static Key key(float v0, float v1, float u) {
    const auto q = [](float f) { return std::lround(static_cast<double>(f) * 1e6); };
    return {q(v0), q(v1), q(u)};
  }
  std::map<Key, AtlasGlyph> by_left_, by_right_;
};

// The glyph quads of one draw command: ImFont::RenderText writes each as the vertices top-left,
// top-right, bottom-right, bottom-left and the indices a, a+1, a+2, a, a+2, a+3.
// A shape that is not a glyph (a span's box, a button's frame) ends an item: `item` counts them.
void collect(const ImDrawList& list, const ImDrawCmd& cmd, const GlyphIndex& index, int list_no,
             int& item, std::vector<DrawnGlyph>& out) {
  const ImDrawIdx* idx = list.IdxBuffer.Data + cmd.IdxOffset;
  const ImDrawVert* vtx = list.VtxBuffer.Data + cmd.VtxOffset;
  ++item;
  bool shape_since_glyph = false;
  for (unsigned i = 0; i + 6 <= cmd.ElemCount;) {
    const unsigned a = idx[i];
    const bool quad = idx[i + 1] == a + 1 && idx[i + 2] == a + 2 && idx[i + 3] == a &&
                      idx[i + 4] == a + 2 && idx[i + 5] == a + 3;
    if (!quad) {
      shape_since_glyph = true;
      i += 3;  // triangles come in threes
      continue;
    }
    const ImDrawVert& tl = vtx[a];
    const ImDrawVert& br = vtx[a + 2];
    const AtlasGlyph* found = quad ? index.find(tl.uv, br.uv) : nullptr;
    if (found == nullptr || br.pos.x <= tl.pos.x || br.pos.y <= tl.pos.y) {
      shape_since_glyph = true;
      i += 6;
      continue;
    }
    if (shape_since_glyph) ++item;
    shape_since_glyph = false;
    const ImFontGlyph& g = *found->glyph;
    const float scale = g.Y1 > g.Y0 ? (br.pos.y - tl.pos.y) / (g.Y1 - g.Y0) : 1.0f;
    const float full_width = (g.X1 - g.X0) * scale;
    const bool fine_cut = (br.pos.x - tl.pos.x) < full_width - 0.5f;
    const bool outside = tl.pos.x < cmd.ClipRect.x - 0.5f || br.pos.x > cmd.ClipRect.z + 0.5f;
    out.push_back({tl.pos.x, tl.pos.y, br.pos.x, br.pos.y, g.Codepoint, fine_cut || outside,
                   tl.pos.y - g.Y0 * scale, found->font->FontSize * scale, list_no, cmd.ClipRect,
                   item});
    i += 6;
  }
}

void append_utf8(std::string& s, unsigned c) {
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_digit(unsigned c) { return c >= '0' && c <= '9'; }

// A line of glyphs in one region, left to right.
struct Line {
  std::vector<const DrawnGlyph*> glyphs;
  // From glyph `from` on.
  std::string text(std::size_t from = 0) const {
    std::string s;
    for (std::size_t k = from; k < glyphs.size(); ++k) {
      // A gap wider than a third of the line's height was a space (spaces draw no glyph).
      if (k > from && glyphs[k]->x0 - glyphs[k - 1]->x1 > glyphs[k]->line_height / 5) s += ' ';
      append_utf8(s, glyphs[k]->codepoint);
    }
    return s;
  }
};

// What a line starting with `next` after one ending in a number would part from it: a number's
// rest or a unit.
bool starts_a_numbers_rest(const std::string& next) {
  if (next.empty()) return false;
  if (is_digit(static_cast<unsigned char>(next[0]))) return true;
  for (const char* unit : {"ms", "\xC2\xB5s", "us", "ns", "MiB", "KiB", "GiB", "bytes", "%"}) {
    const std::string u(unit);
    if (next.compare(0, u.size(), u) == 0 &&
        (next.size() == u.size() || !std::isalpha(static_cast<unsigned char>(next[u.size()])))) {
      return true;
    }
  }
  return false;
}

// `text` with every run of spaces and tabs as one space; line ends kept (an item's end).
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r') {
      if (!out.empty() && out.back() != ' ' && out.back() != '\n') out += ' ';
    } else {
      if (c == '\n' && !out.empty() && out.back() == ' ') out.pop_back();
      out += c;
    }
  }
  return out;
}

// The line's text without an ellipsis ImGui put at its end ("...", or the one character).
std::string without_ellipsis(std::string text) {
  for (const std::string_view end : {std::string_view("..."), std::string_view("\xE2\x80\xA6")}) {
    if (text.size() > end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0) {
      text.resize(text.size() - end.size());
      while (!text.empty() && text.back() == ' ') text.pop_back();
      return text;
    }
  }
  return text;
}

// Whether `drawn` is, everywhere in `logged`, followed by more of its item: the rest of a word,
// or after a space a word that `wrapped_to(word)` does not find starting the line below. False
// where it is never logged (not an item's text) or ends an item somewhere ('\n'; '|': a table
// cell; ']' or '}' after a space: a button's or a field's label).
template <class WrappedTo>
bool cut_where_logged(const std::string& drawn, const std::string& logged,
                      const WrappedTo& wrapped_to) {
  if (drawn.size() < 2) return false;
  bool found = false;
  for (std::size_t at = logged.find(drawn); at != std::string::npos;
       at = logged.find(drawn, at + 1)) {
    found = true;
    std::size_t after = at + drawn.size();
    if (after >= logged.size() || logged[after] == '\n' || logged[after] == '|') return false;
    if (logged[after] != ' ') continue;  // the rest of a word
    ++after;
    const std::size_t end = logged.find_first_of(" \n|", after);
    const std::string word = logged.substr(after, end == std::string::npos ? end : end - after);
    // "]" and "}": the log's brackets round a button's or a field's label.
    if (word.empty() || word[0] == ']' || word[0] == '}' || wrapped_to(word)) return false;
  }
  return found;
}

}  // namespace

TextAudit audit_text(const ImDrawData& draw_data, const ImFontAtlas& atlas,
                     const std::string& logged) {
  const GlyphIndex index(atlas);
  std::vector<DrawnGlyph> glyphs;
  int item = 0;
  for (int l = 0; l < draw_data.CmdListsCount; ++l) {
    const ImDrawList& list = *draw_data.CmdLists[l];
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      if (cmd.UserCallback != nullptr || cmd.TextureId != atlas.TexID) continue;
      collect(list, cmd, index, l, item, glyphs);
    }
  }
  TextAudit audit;
  audit.glyphs = static_cast<int>(glyphs.size());
  // Lines: glyphs of one window and clip region on one line top, left to right; a new line where
  // a glyph starts left of the one before (another item on the same row of pixels).
  std::map<std::tuple<int, long, long, long, long, long>, std::vector<const DrawnGlyph*>> rows;
  for (const DrawnGlyph& g : glyphs) {
    rows[{g.list, std::lround(g.clip.x), std::lround(g.clip.y), std::lround(g.clip.z),
          std::lround(g.clip.w), std::lround(g.line_top * 2)}]
        .push_back(&g);
  }
  std::vector<Line> lines;
  for (auto& [key, row] : rows) {
    std::stable_sort(row.begin(), row.end(),
                     [](const DrawnGlyph* a, const DrawnGlyph* b) { return a->x0 < b->x0; });
    Line line;
    for (const DrawnGlyph* g : row) {
      // Two items on one row of pixels (a table's cells, a label and its value) are apart by more
      // than a word space: each is a line of its own.
      if (!line.glyphs.empty() && g->x0 - line.glyphs.back()->x1 > g->line_height * 1.5f) {
        lines.push_back(std::move(line));
        line = Line{};
      }
      line.glyphs.push_back(g);
    }
    if (!line.glyphs.empty()) lines.push_back(std::move(line));
  }
  std::set<std::string> cut, broken, in_part;
  const std::string words = squeezed(logged);
  for (const Line& line : lines) {
    // In part: some of its glyphs' ink in view, less than three quarters of its line.
    const DrawnGlyph& first = *line.glyphs.front();
    const float in_view = std::min(first.line_top + first.line_height, first.clip.w) -
                          std::max(first.line_top, first.clip.y);
    const bool seen = std::any_of(line.glyphs.begin(), line.glyphs.end(), [](const DrawnGlyph* g) {
      return std::min(g->y1, g->clip.w) - std::max(g->y0, g->clip.y) > 0.5f;
    });
    if (seen && in_view < 0.75f * first.line_height) in_part.insert(line.text());
    if (std::any_of(line.glyphs.begin(), line.glyphs.end(),
                    [](const DrawnGlyph* g) { return g->clipped; })) {
      cut.insert(line.text());
      continue;
    }
    // A line that stops at its clip edge (the next glyph would have started past it), or ends in
    // an ellipsis, whose logged text goes on.
    const DrawnGlyph& last = *line.glyphs.back();
    if (words.empty() || last.x1 < last.clip.z - last.line_height) continue;
    const std::string text = line.text();
    const std::string shown = without_ellipsis(text);
    // The line below in its region, from the same left edge, starting with `word`: a wrap.
    const auto wrapped_to = [&](const std::string& word) {
      const DrawnGlyph& first = *line.glyphs.front();
      return std::any_of(lines.begin(), lines.end(), [&](const Line& below) {
        const DrawnGlyph& f = *below.glyphs.front();
        return f.list == first.list && f.line_top > first.line_top &&
               f.line_top < first.line_top + 2.5f * first.line_height &&
               std::fabs(f.x0 - first.x0) < first.line_height &&
               below.text().compare(0, word.size(), word) == 0;
      });
    };
    // Only the line's last item can run into the edge: two labels drawn side by side ("forward"
    // and "backward" in the Timeline's spans) are not the words a legend logs as one line.
    std::size_t last_item = line.glyphs.size() - 1;
    while (last_item > 0 && line.glyphs[last_item - 1]->item == last.item) --last_item;
    if (shown != text
            ? words.find(text) == std::string::npos && !shown.empty()
            : cut_where_logged(text, words, wrapped_to) &&
                  (last_item == 0 || cut_where_logged(line.text(last_item), words, wrapped_to))) {
      cut.insert(text);
    }
  }
  // A wrapped line's next starts one line height below at the same left edge, in one region.
  for (const Line& a : lines) {
    const DrawnGlyph& last = *a.glyphs.back();
    if (!is_digit(last.codepoint) && last.codepoint != '.') continue;
    // The line must end in a number ("0.", "13.3"), not a name with a digit ("/gpu:0").
    const std::string text = a.text();
    const std::string word =
        text.substr(text.find_last_of(" (") == std::string::npos ? 0 : text.find_last_of(" (") + 1);
    if (word.empty() || !std::all_of(word.begin(), word.end(), [](char c) {
          return is_digit(static_cast<unsigned char>(c)) || c == '.' || c == ',';
        })) {
      continue;
    }
    for (const Line& b : lines) {
      const DrawnGlyph& first = *b.glyphs.front();
      if (first.list != last.list || first.clip.x != last.clip.x || first.clip.z != last.clip.z ||
          std::fabs(first.line_top - last.line_top - last.line_height) > 0.75f ||
          first.x0 > a.glyphs.front()->x0 + last.line_height) {
        continue;
      }
      const std::string next = b.text();
      if (starts_a_numbers_rest(next)) broken.insert(text + " | " + next);
    }
  }
  audit.cut.assign(cut.begin(), cut.end());
  audit.broken_numbers.assign(broken.begin(), broken.end());
  audit.in_part.assign(in_part.begin(), in_part.end());
  return audit;
}

}  // namespace mirrorlab::gui
