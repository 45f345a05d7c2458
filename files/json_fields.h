// The strict reader of a parsed JSON document's fields (a checkpoint's state, a recording): each
// accessor gives a field of the kind asked for, or refuses it, naming the field by its path from
// the document ("position.epoch", "check[3].seconds") with the words of files/field_words.h. The
// refusal goes through a function the reader gives, which throws the reader's own error: the
// file, and what the file should be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mirrorlab::files {

// Throws the reader's error for the field `name` ("position.epoch"; "" for the document itself)
// and its `problem` ("is missing"). Should it return, the refusal is thrown as std::runtime_error.
using FieldFailure = std::function<void(const std::string& name, const std::string& problem)>;

class JsonList;

// A JSON number written with a point or an exponent (2.0, 1e9: what some JSON and TOML writers
// give) whose value is whole and finite: that value; anything else (1.5, an integer, text):
// nullopt. The readers take it as the whole number it is worth, within their own bounds.
std::optional<double> whole_float(const nlohmann::json& value);

// A JSON object and its path.
class JsonFields {
 public:
  // Refuses `value` unless it is an object.
  JsonFields(const nlohmann::json& value, std::string path, FieldFailure fail);

  const std::string& path() const { return path_; }
  std::string name(std::string_view key) const;  // the path of `key` in it; "" is the object
  [[noreturn]] void fail(std::string_view key, const std::string& problem) const;

  const nlohmann::json& at(std::string_view key) const;  // present, of any kind
  bool has(std::string_view key) const;                  // present, and not null

  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::uint64_t unsigned_integer(
      std::string_view key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const;
  double real(std::string_view key) const;  // a finite number (JSON text holds no other)
  // In [min, max]; `zero_too`: 0 as well, whatever min is.
  double real(std::string_view key, double min, double max, bool zero_too = false) const;
  std::string text(std::string_view key) const;
  bool flag(std::string_view key) const;
  JsonFields object(std::string_view key) const;
  // An array of at most `most` entries.
  JsonList list(std::string_view key,
                std::size_t most = std::numeric_limits<std::size_t>::max()) const;

 private:
  const nlohmann::json* object_;
  std::string path_;
  FieldFailure fail_;
};

// A JSON array and its path; an entry's path is the list's and its index ("check[3]").
class JsonList {
 public:
  const std::string& path() const { return path_; }
  std::string name(std::size_t i) const;
  [[noreturn]] void fail(const std::string& problem) const;  // of the list as a whole
  [[noreturn]] void fail(std::size_t i, const std::string& problem) const;

  std::size_t size() const;
  bool empty() const { return size() == 0; }
  const nlohmann::json& at(std::size_t i) const;
  JsonFields object(std::size_t i) const;
  std::string text(std::size_t i) const;

 private:
  friend class JsonFields;
  JsonList(const nlohmann::json& array, std::string path, FieldFailure fail);

  const nlohmann::json* array_;
  std::string path_;
  FieldFailure fail_;
};

}  // namespace mirrorlab::files
