// Small pieces of text the command line and the GUI draw with: a run of one (UTF-8) cell, UTF-8
// text taken by its characters where a byte count would cut one in two, numbers grouped, and a
// line wrapped to a terminal's width.
#pragma once

#include <algorithm>
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

// "1 step", "2 steps": a count and its noun, the noun plural unless the count is one.
inline std::string counted(std::int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
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

// A line of plain text wrapped at its spaces to `width` columns: its first line goes on after
// `used` columns already printed, the next ones start with `indent`. No line break at its end.
inline std::string wrap_line(const std::string& text, int width, int used,
                             const std::string& indent) {
  const auto cells = [](std::string_view s) { return static_cast<int>(character_count(s)); };
  std::string out;
  bool line_empty = true;
  for (std::size_t b = 0; b < text.size();) {
    const std::size_t e = std::min(text.find_first_of(" \n", b), text.size());
    const std::string word = text.substr(b, e - b);
    const bool breaks = e < text.size() && text[e] == '\n';  // the text's own line break
    b = e + 1;
    if (word.empty() && !breaks) continue;
    if (!word.empty() && !line_empty && used + 1 + cells(word) > width) {
      out += "\n" + indent;
      used = cells(indent);
      line_empty = true;
    }
    if (!word.empty()) {
      if (!line_empty) {
        out += ' ';
        ++used;
      }
      out += word;
      used += cells(word);
      line_empty = false;
    }
    if (breaks && b < text.size()) {
      out += "\n" + indent;
      used = cells(indent);
      line_empty = true;
    }
  }
  return out;
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
