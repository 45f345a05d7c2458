// A lesson's prose in the window: paragraphs of styled runs (lessons/player/lesson.h) wrapped to
// the panel's width, word by word, **bold** in the bold face, `code` in the monospaced one and
// *emphasis* in a colour, bullets and numbered items indented as in the file.
#pragma once

#include <vector>

#include "gui/drawing/text_fonts.h"
#include "lessons/player/lesson.h"

namespace mirrorlab::gui {

void draw_paragraphs(const std::vector<lessons::Paragraph>& paragraphs, const TextFonts& fonts);

}  // namespace mirrorlab::gui
