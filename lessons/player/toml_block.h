// Reading one ```toml block of a lesson with toml++, every value checked for its type and range,
// every error a LessonError at the file's own line (the block's first line plus the value's).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lessons/player/lesson_text.h"
#include "nlohmann/json_fwd.hpp"

namespace mirrorlab::lessons {

class TomlBlock {
 public:
  // Parses `body`, which starts on line `first_line` of `file`. Throws LessonError.
  TomlBlock(const std::string& body, std::string file, int first_line);
  // A view of one table inside it (for [setup], each [[check]], each action).
  TomlBlock(const TomlBlock& parent, const toml::table& table);

  const toml::table& table() const { return *table_; }
  int line_of(const toml::node& node) const;
  int line() const { return line_of(*table_); }
  [[noreturn]] void fail(int line, const std::string& what) const;

  // Refuses any key not in `allowed` (a misspelt key is an error, not ignored).
  void only(std::initializer_list<std::string_view> allowed, std::string_view where) const;
  void only(const std::vector<std::string>& allowed, std::string_view where) const;
  // The table's values as a JSON object (numbers, texts, true/false, lists of them), for readers
  // shared with JSON files (the run's settings). A date, a time or a nested table is refused.
  nlohmann::json as_json() const;
  int line_of_key(std::string_view key) const { return has(key) ? line_of(node(key)) : line(); }
  bool has(std::string_view key) const { return table_->contains(key); }

  std::optional<std::string> text(std::string_view key) const;
  std::string required_text(std::string_view key, std::string_view what) const;
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  std::optional<double> number(std::string_view key) const;  // finite, integer or float
  std::optional<bool> boolean(std::string_view key) const;
  std::vector<std::string> texts(std::string_view key) const;  // an array of strings
  // An array of integers in [lo, hi], or one integer (a list of one).
  std::vector<std::int64_t> integers(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  // The tables of an array of tables ([[check]]), or of an array of inline tables.
  std::vector<TomlBlock> tables(std::string_view key) const;
  std::optional<TomlBlock> sub_table(std::string_view key) const;

 private:
  const toml::node& node(std::string_view key) const;
  std::shared_ptr<const toml::table> root_;
  const toml::table* table_ = nullptr;
  std::string file_;
  int first_line_ = 1;
};

}  // namespace mirrorlab::lessons
