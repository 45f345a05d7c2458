#include "files/field_words.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace mirrorlab::files::field_words {

std::string missing() { return "is missing"; }
std::string not_whole() { return "is not a whole number"; }
std::string not_whole(std::string_view value) {
  return "is " + std::string(value) + ", not a whole number";
}
std::string not_number() { return "is not a number"; }
std::string not_finite(std::string_view value) {
  return "is " + std::string(value) + ", not a finite number";
}
std::string not_text() { return "is not text (\"...\")"; }
std::string not_flag() { return "is not true or false"; }
std::string not_object() { return "is not an object ({...})"; }
std::string not_table(std::string_view name) {
  return "is not a table ([" + std::string(name) + "])";
}
std::string not_list() { return "is not a list ([...])"; }
std::string too_many(std::size_t count, std::size_t most) {
  return "holds " + std::to_string(count) + " entries, more than " + std::to_string(most);
}
std::string too_few(std::size_t count, std::size_t least) {
  return "holds " + std::to_string(count) + " entries, fewer than " + std::to_string(least);
}

std::string outside(std::int64_t value, std::int64_t min, std::int64_t max) {
  return outside(std::to_string(value), std::to_string(min), std::to_string(max));
}
std::string outside(double value, double min, double max) {
  return outside(number_text(value), number_text(min), number_text(max));
}
std::string outside(std::string_view value, std::string_view min, std::string_view max) {
  return "is " + std::string(value) + ", outside [" + std::string(min) + ", " + std::string(max) +
         "]";
}
std::string out_of_range(std::string_view value) {
  return "is " + std::string(value) + ", out of range";
}
std::string not_one_of(std::string_view value, std::string_view names) {
  return "is '" + std::string(value) + "', not one of " + std::string(names);
}

namespace {

// The edits (a letter added, removed or changed, or two neighbours swapped: "rign" for "ring")
// that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string lowered(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string nearest_name(std::string_view given, const std::vector<std::string>& names) {
  if (given.size() > 200) return "";  // no name is that long: a line pasted by mistake
  const std::string name = lowered(std::string(given));
  std::string nearest, begun;
  std::size_t nearest_distance = std::max<std::size_t>(1, (name.size() + 1) / 3) + 1;
  int begins = 0;
  for (const std::string& candidate : names) {
    const std::string other = lowered(candidate);
    const std::size_t distance = edit_distance(name, other);
    if (distance < nearest_distance) nearest_distance = distance, nearest = candidate;
    if (name.size() >= 3 && other.starts_with(name)) ++begins, begun = candidate;
  }
  return !nearest.empty() ? nearest : begins == 1 ? begun : "";
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& names) {
  const std::string meant = nearest_name(given, names);
  return meant.empty() ? "" : " (did you mean " + meant + "?)";
}

std::string did_you_mean_key(std::string_view given, const std::vector<std::string>& names) {
  const std::string meant = nearest_name(given, names);
  return meant.empty() ? "" : ": did you mean `" + meant + "`?";
}

std::string number_text(double value) {
  char text[48];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace mirrorlab::files::field_words
