#include "app/output/lesson_text.h"

#include <algorithm>

#include "core/session/text/console_text.h"

namespace mirrorlab::app {
namespace {

// Words of the runs, each carrying whether it is drawn bold; a run's spaces separate words.
struct Word {
  std::string text;
  bool bold = false;
  bool glued = false;  // no space before it (a run that starts mid-word, as `x`,)
};

std::vector<Word> words_of(const lessons::Paragraph& p) {
  std::vector<Word> words;
  bool at_space = true;
  for (const lessons::TextRun& run : p.runs) {
    const bool bold =
        run.style == lessons::RunStyle::kStrong || run.style == lessons::RunStyle::kCode;
    for (char c : run.text) {
      if (c == ' ' || c == '\n') {
        at_space = true;
        continue;
      }
      if (at_space || words.empty() || words.back().bold != bold) {
        words.push_back(Word{"", bold, !at_space && !words.empty()});
      }
      words.back().text += c;
      at_space = false;
    }
  }
  return words;
}

// Display width of UTF-8 text: its code points (the lessons' text has no wide characters).
int cells(const std::string& s) { return static_cast<int>(core::character_count(s)); }

}  // namespace

std::string wrap_paragraphs(const std::vector<lessons::Paragraph>& text, int width, bool styled) {
  std::string out;
  int number = 0;
  for (const lessons::Paragraph& p : text) {
    if (p.kind == lessons::ParagraphKind::kCodeBlock) {
      const std::string code = p.plain();
      for (std::size_t b = 0, e; b < code.size(); b = e + 1) {
        e = code.find('\n', b);
        if (e == std::string::npos) e = code.size();
        out += "    " + code.substr(b, e - b) + "\n";
      }
      out += "\n";
      continue;
    }
    number = p.kind == lessons::ParagraphKind::kNumbered ? number + 1 : 0;
    std::string first = "", rest = "";
    if (p.kind == lessons::ParagraphKind::kBullet) first = "  - ", rest = "    ";
    if (p.kind == lessons::ParagraphKind::kNumbered) {
      first = "  " + std::to_string(number) + ". ";
      rest = std::string(first.size(), ' ');
    }
    if (p.kind == lessons::ParagraphKind::kQuote) first = rest = "  | ";
    std::string line = first;
    int used = cells(first);
    bool line_empty = true;
    const std::vector<Word> words = words_of(p);
    for (std::size_t i = 0; i < words.size(); ++i) {
      const Word& w = words[i];
      // A word and the runs glued to it ("(`--flag`,") break as one.
      int group = cells(w.text);
      for (std::size_t j = i + 1; !w.glued && j < words.size() && words[j].glued; ++j) {
        group += cells(words[j].text);
      }
      if (!line_empty && !w.glued && used + 1 + group > width) {
        out += line + "\n";
        line = rest;
        used = cells(rest);
        line_empty = true;
      }
      if (!line_empty && !w.glued) {
        line += ' ';
        ++used;
      }
      line += core::bold(w.text, styled && w.bold);
      used += cells(w.text);
      line_empty = false;
    }
    out += line + "\n";
    const bool list_goes_on =
        p.kind == lessons::ParagraphKind::kBullet || p.kind == lessons::ParagraphKind::kNumbered;
    if (!list_goes_on || &p == &text.back() || (&p + 1)->kind != p.kind) out += "\n";
  }
  return out;
}

}  // namespace mirrorlab::app
