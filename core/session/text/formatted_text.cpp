#include "core/session/text/formatted_text.h"

#include <algorithm>
#include <cstdio>

namespace mirrorlab::core {

std::string vformatted(const char* format, va_list args) {
  va_list measure;
  va_copy(measure, args);
  const int size = std::vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  std::string text(static_cast<std::size_t>(std::max(size, 0)) + 1, '\0');
  va_list write;
  va_copy(write, args);
  std::vsnprintf(text.data(), text.size(), format, write);
  va_end(write);
  text.resize(text.size() - 1);
  return text;
}

std::string formatted(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string text = vformatted(format, args);
  va_end(args);
  return text;
}

}  // namespace mirrorlab::core
