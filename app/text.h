// Small pieces of text the command line draws with: a run of one (UTF-8) cell.
#pragma once

#include <cstdint>
#include <string>

namespace mirrorlab::app {

// `cell` written `n` times ("━" x 20 for Keras' bar); nothing for n <= 0.
inline std::string repeat(const char* cell, std::int64_t n) {
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) s += cell;
  return s;
}

}  // namespace mirrorlab::app
