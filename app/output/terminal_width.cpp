#include "app/output/terminal_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace mirrorlab::app {

int terminal_width() {
  int columns = 0;
  if (const char* set = std::getenv("COLUMNS"); set != nullptr) {
    const char* end = set + std::strlen(set);
    if (std::from_chars(set, end, columns).ptr != end) columns = 0;  // not a whole number
  }
  winsize size{};
  if (columns <= 0 && isatty(STDOUT_FILENO) != 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) {
    columns = size.ws_col;
  }
  if (columns <= 0) return kUsualText;
  return std::clamp(columns, kNarrowestText, kWidestText);
}

}  // namespace mirrorlab::app
