#include "lessons/player/markdown_sections.h"

#include <md4c.h>

#include <algorithm>

namespace mirrorlab::lessons {
namespace {

// The walk over md4c's callbacks: blocks open and close, text arrives in pieces.
class Reader {
 public:
  explicit Reader(std::string_view doc) : doc_(doc) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      if (doc[i] == '\n') line_starts_.push_back(i + 1);
    }
    sections_.emplace_back();
  }

  std::vector<Section> take() { return std::move(sections_); }

  int enter_block(MD_BLOCKTYPE type, void* detail) {
    switch (type) {
      case MD_BLOCK_H: {
        const unsigned level = static_cast<MD_BLOCK_H_DETAIL*>(detail)->level;
        if (level <= 2) {
          // A heading may sit inside a list item or a quote ("- ## Step") whose paragraph is
          // open: close it in its own section before the new one starts, or its text would
          // go on into the section before, and close() would pop the new section's paragraphs.
          close();
          sections_.push_back(Section{static_cast<int>(level), "", 0, {}, {}});
          in_heading_ = true;
        } else {
          open(ParagraphKind::kParagraph);
          style_.push_back(RunStyle::kStrong);
        }
        break;
      }
      case MD_BLOCK_CODE: {
        const auto* code = static_cast<MD_BLOCK_CODE_DETAIL*>(detail);
        if (std::string_view(code->lang.text, code->lang.size) == "toml") {
          in_toml_ = true;
          const int fence_line = code->lang.size > 0 ? line_of(code->lang.text) : last_line_;
          sections_.back().toml.push_back(FencedBlock{"", fence_line + 1});
        } else {
          open(ParagraphKind::kCodeBlock);
        }
        break;
      }
      case MD_BLOCK_UL:
        lists_.push_back(ParagraphKind::kBullet);
        break;
      case MD_BLOCK_OL:
        lists_.push_back(ParagraphKind::kNumbered);
        break;
      case MD_BLOCK_QUOTE:
        ++quotes_;
        break;
      case MD_BLOCK_LI:
        open(lists_.empty() ? ParagraphKind::kBullet : lists_.back());
        break;
      case MD_BLOCK_P:
        if (!open_ || !open_->runs.empty()) open(container_kind());
        break;
      default:
        break;
    }
    return 0;
  }

  int leave_block(MD_BLOCKTYPE type, void*) {
    switch (type) {
      case MD_BLOCK_H:
        if (in_heading_) {
          in_heading_ = false;
        } else {
          style_.pop_back();
          close();
        }
        break;
      case MD_BLOCK_CODE:
        if (in_toml_)
          in_toml_ = false;
        else
          close();
        break;
      case MD_BLOCK_UL:
      case MD_BLOCK_OL:
        lists_.pop_back();
        break;
      case MD_BLOCK_QUOTE:
        --quotes_;
        break;
      case MD_BLOCK_LI:
      case MD_BLOCK_P:
        close();
        break;
      default:
        break;
    }
    return 0;
  }

  int enter_span(MD_SPANTYPE type) {
    style_.push_back(type == MD_SPAN_STRONG ? RunStyle::kStrong
                     : type == MD_SPAN_EM   ? RunStyle::kEmphasis
                     : type == MD_SPAN_CODE ? RunStyle::kCode
                                            : current_style());
    return 0;
  }
  int leave_span() {
    style_.pop_back();
    return 0;
  }

  int text(MD_TEXTTYPE type, const MD_CHAR* text, MD_SIZE size) {
    if (text >= doc_.data() && text < doc_.data() + doc_.size()) last_line_ = line_of(text);
    std::string piece(text, size);
    if (type == MD_TEXT_SOFTBR || type == MD_TEXT_BR) piece.assign(1, ' ');
    if (type == MD_TEXT_NULLCHAR) piece.assign("\xEF\xBF\xBD", 3);  // U+FFFD, as CommonMark says
    Section& section = sections_.back();
    if (in_heading_) {
      if (section.line == 0) section.line = last_line_;
      section.title += piece;
    } else if (in_toml_) {
      section.toml.back().body += piece;
    } else {
      if (!open_) open(container_kind());
      const RunStyle style =
          open_->kind == ParagraphKind::kCodeBlock ? RunStyle::kCode : current_style();
      if (!open_->runs.empty() && open_->runs.back().style == style) {
        open_->runs.back().text += piece;
      } else {
        open_->runs.push_back(TextRun{piece, style});
      }
    }
    return 0;
  }

 private:
  int line_of(const char* p) const {
    const std::size_t offset = static_cast<std::size_t>(p - doc_.data());
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) -
                            line_starts_.begin());
  }
  ParagraphKind container_kind() const {
    return quotes_ > 0 ? ParagraphKind::kQuote : ParagraphKind::kParagraph;
  }
  RunStyle current_style() const { return style_.empty() ? RunStyle::kPlain : style_.back(); }
  void open(ParagraphKind kind) {
    close();
    sections_.back().text.push_back(Paragraph{kind, {}});
    open_ = &sections_.back().text.back();
  }
  void close() {
    if (open_ && open_->runs.empty()) sections_.back().text.pop_back();
    if (open_ && open_->kind == ParagraphKind::kCodeBlock && !open_->runs.empty()) {
      std::string& code = open_->runs.back().text;
      while (!code.empty() && code.back() == '\n') code.pop_back();
    }
    open_ = nullptr;
  }

  std::string_view doc_;
  std::vector<std::size_t> line_starts_{0};
  std::vector<Section> sections_;
  Paragraph* open_ = nullptr;
  std::vector<ParagraphKind> lists_;
  std::vector<RunStyle> style_;
  int quotes_ = 0;
  bool in_heading_ = false, in_toml_ = false;
  int last_line_ = 1;
};

Reader& reader(void* userdata) { return *static_cast<Reader*>(userdata); }

}  // namespace

std::vector<Section> read_sections(std::string_view markdown, const std::string& path) {
  Reader r(markdown);
  MD_PARSER parser{};
  parser.abi_version = 0;
  parser.flags = MD_DIALECT_COMMONMARK | MD_FLAG_NOHTML;
  parser.enter_block = [](MD_BLOCKTYPE t, void* d, void* u) { return reader(u).enter_block(t, d); };
  parser.leave_block = [](MD_BLOCKTYPE t, void* d, void* u) { return reader(u).leave_block(t, d); };
  parser.enter_span = [](MD_SPANTYPE t, void*, void* u) { return reader(u).enter_span(t); };
  parser.leave_span = [](MD_SPANTYPE, void*, void* u) { return reader(u).leave_span(); };
  parser.text = [](MD_TEXTTYPE t, const MD_CHAR* s, MD_SIZE n, void* u) {
    return reader(u).text(t, s, n);
  };
  if (md_parse(markdown.data(), static_cast<MD_SIZE>(markdown.size()), &parser, &r) != 0) {
    throw LessonError(path, 0, "md4c could not read it as Markdown");
  }
  return r.take();
}

}  // namespace mirrorlab::lessons
