// A lesson's prose for the terminal: paragraphs wrapped to a width, bullets and quotes indented,
// **strong** and `code` in bold where the output is a terminal.
#pragma once

#include <string>
#include <vector>

#include "lessons/player/lesson.h"

namespace mirrorlab::app {

std::string wrap_paragraphs(const std::vector<lessons::Paragraph>& text, int width, bool styled);

// A line of plain text wrapped at its spaces to `width` columns: its first line goes on after
// `used` columns already printed, the next ones start with `indent`. No line break at its end.
std::string wrap_line(const std::string& text, int width, int used, const std::string& indent);

}  // namespace mirrorlab::app
