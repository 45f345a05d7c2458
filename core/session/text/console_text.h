// Small pieces of text the command line draws with: a run of one (UTF-8) cell.
#pragma once

#include <cstdint>
#include <string>

namespace mirrorlab::core {

// `cell` written `n` times ("━" x 20 for Keras' bar); nothing for n <= 0.
inline std::string repeat(const char* cell, std::int64_t n) {
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) s += cell;
  return s;
}

// `s` in bold (ANSI) when `on`, as it is otherwise: for output that may not be a terminal.
inline std::string bold(const std::string& s, bool on) {
  return on ? "\x1b[1m" + s + "\x1b[0m" : s;
}

}  // namespace mirrorlab::core
