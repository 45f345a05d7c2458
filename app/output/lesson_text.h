// A lesson's prose for the terminal: paragraphs wrapped to a width, bullets and quotes indented,
// **strong** and `code` in bold where the output is a terminal.
#pragma once

#include <string>
#include <vector>

#include "lessons/player/lesson.h"

namespace mirrorlab::app {

std::string wrap_paragraphs(const std::vector<lessons::Paragraph>& text, int width, bool styled);

}  // namespace mirrorlab::app
