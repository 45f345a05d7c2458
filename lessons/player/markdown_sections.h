// A lesson file's Markdown, cut into its sections by md4c: each heading starts one, with its
// prose as paragraphs and its fenced code blocks, each with the line it starts on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lessons/player/lesson_text.h"

namespace mirrorlab::lessons {

struct FencedBlock {
  std::string body;
  int line = 0;  // of the block's first line of content (the line after the fence)
};

struct Section {
  int level = 0;  // 1 for `#`, 2 for `##`; 0 for what comes before the first heading
  std::string title;
  int line = 0;  // of the heading
  std::vector<Paragraph> text;
  std::vector<FencedBlock> toml;  // its ```toml blocks; other code blocks are kept as text
};

// Every section in order (the first, of level 0, holds what precedes the first heading). Headings
// of level 3 and more are kept as bold paragraphs of their section. Throws LessonError when md4c
// cannot read the text (it reads any text as Markdown; in practice, out of memory).
std::vector<Section> read_sections(std::string_view markdown, const std::string& path);

}  // namespace mirrorlab::lessons
