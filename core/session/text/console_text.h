// Small pieces of text the command line and the GUI draw with: a run of one (UTF-8) cell, UTF-8
// text taken by its characters where a byte count would cut one in two, and numbers grouped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

// Whether byte `c` continues a UTF-8 character (10xxxxxx) rather than starting one.
inline bool continues_character(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The largest place <= `at` (and <= s.size()) that is not inside a UTF-8 character of `s`: where
// to cut it ("no key named '...'" cut at 40 bytes).
inline std::size_t character_boundary(std::string_view s, std::size_t at) {
  if (at >= s.size()) return s.size();
  while (at > 0 && continues_character(s[at])) --at;
  return at;
}

// The characters (code points) of UTF-8 text `s`: its width where no character is wide.
inline std::size_t character_count(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += !continues_character(c);
  return n;
}

// `s` without the spaces, tabs and carriage returns around it (a line as typed).
inline std::string trimmed(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t\r");
  return b == std::string_view::npos
             ? ""
             : std::string(s.substr(b, s.find_last_not_of(" \t\r") - b + 1));
}

// A printed number with the digits of its whole part in groups of three, read from afar:
// "2821752" -> "2,821,752", "-1230" -> "-1,230", "1234.5" -> "1,234.5"; other text as it is.
inline std::string grouped_digits(std::string_view printed) {
  const std::size_t sign = !printed.empty() && printed[0] == '-' ? 1 : 0;
  std::size_t end = sign;
  while (end < printed.size() && printed[end] >= '0' && printed[end] <= '9') ++end;
  std::string out(printed.substr(0, sign));
  for (std::size_t i = sign; i < end; ++i) {
    if (i > sign && (end - i) % 3 == 0) out += ',';
    out += printed[i];
  }
  return out.append(printed.substr(end));
}

}  // namespace mirrorlab::core
