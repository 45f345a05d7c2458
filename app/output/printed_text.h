// Lines a command prints, within the terminal's width.
#pragma once

#include <string>

#include "core/session/text/formatted_text.h"

namespace mirrorlab::app {

// printf's text as a string.
using core::formatted;

// The words of `text` on lines of at most `width` columns (0: the terminal's, terminal_width()),
// the first starting with `first`, the others with `next` (a line of its own, its next lines
// indented); a word longer than a line (a path) has one to itself.
void print_wrapped(const std::string& text, const std::string& first = "",
                   const std::string& next = "  ", int width = 0);

}  // namespace mirrorlab::app
