// A lesson's prose in the window: paragraphs of styled runs (lessons/player/lesson.h) wrapped to
// the panel's width, word by word, **bold** in the bold face, `code` in the monospaced one and
// *emphasis* in a colour, bullets and numbered items indented as in the file, code blocks whole.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gui/drawing/text_fonts.h"
#include "lessons/player/lesson.h"

namespace mirrorlab::gui {

// A code block's lines cut to `columns` characters, so code shows whole in a narrow panel: a
// line too long breaks after a space, comma, '(' or '.' (else at the edge), and its rest goes on
// lines indented four past its own indentation, as Python's continuation lines are.
std::vector<std::string> wrap_code_lines(std::string_view code, int columns);

void draw_paragraphs(const std::vector<lessons::Paragraph>& paragraphs, const TextFonts& fonts);

// The widest word of `paragraphs` as draw_paragraphs() places it (its list indentation included),
// in pixels at the current font: a word is never broken, so no narrower column shows each whole.
// Code blocks aside: wrap_code_lines() breaks their lines to any width.
float widest_word(const std::vector<lessons::Paragraph>& paragraphs, const TextFonts& fonts);

}  // namespace mirrorlab::gui
