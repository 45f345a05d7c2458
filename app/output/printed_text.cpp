#include "app/output/printed_text.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "app/output/terminal_width.h"
#include "core/session/text/console_text.h"

namespace mirrorlab::app {

std::string formatted(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(static_cast<std::size_t>(std::max(size, 0)) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  text.resize(text.size() - 1);
  return text;
}

void print_wrapped(const std::string& text, const std::string& first, const std::string& next,
                   int width) {
  if (width <= 0) width = terminal_width();
  std::printf(
      "%s%s\n", first.c_str(),
      core::wrap_line(text, width, static_cast<int>(core::character_count(first)), next).c_str());
}

}  // namespace mirrorlab::app
