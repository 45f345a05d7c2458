#include "app/output/printed_text.h"

#include <cstdio>

#include "app/output/terminal_width.h"
#include "core/session/text/console_text.h"

namespace mirrorlab::app {

void print_wrapped(const std::string& text, const std::string& first, const std::string& next,
                   int width) {
  if (width <= 0) width = terminal_width();
  std::printf(
      "%s%s\n", first.c_str(),
      core::wrap_line(text, width, static_cast<int>(core::character_count(first)), next).c_str());
}

}  // namespace mirrorlab::app
