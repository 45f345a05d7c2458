// A POSIX extended regular expression searched in a text (regcomp/regexec of the C library), for
// the tests that read a number out of a command's output. Not std::regex: its templates cost a
// source 13 s of compiling in the ASan + UBSan build (4 s at -O3), measured on the 2-core VM.
#pragma once

#include <regex.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mirrorlab::testing {

// The first match of `pattern` (POSIX extended syntax: [0-9]+, no \d) in `text`: the whole match,
// then each group ("" for a group that took no part); empty when nothing matches. A pattern that
// does not compile throws, naming it.
inline std::vector<std::string> regex_search_groups(const std::string& text,
                                                    const std::string& pattern) {
  regex_t compiled;
  if (regcomp(&compiled, pattern.c_str(), REG_EXTENDED) != 0) {
    throw std::invalid_argument("not a POSIX extended regular expression: " + pattern);
  }
  std::vector<regmatch_t> found(compiled.re_nsub + 1);
  std::vector<std::string> groups;
  if (regexec(&compiled, text.c_str(), found.size(), found.data(), 0) == 0) {
    for (const regmatch_t& group : found) {
      groups.push_back(group.rm_so < 0 ? std::string()
                                       : text.substr(group.rm_so, group.rm_eo - group.rm_so));
    }
  }
  regfree(&compiled);
  return groups;
}

inline bool regex_found(const std::string& text, const std::string& pattern) {
  return !regex_search_groups(text, pattern).empty();
}

}  // namespace mirrorlab::testing
