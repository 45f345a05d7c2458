#include "files/field_words.h"

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

std::string number_text(double value) {
  char text[48];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace mirrorlab::files::field_words
