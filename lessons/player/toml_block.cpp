#include "lessons/player/toml_block.h"

#include <cmath>
#include <memory>

#include "files/field_words.h"
#include "nlohmann/json.hpp"

namespace mirrorlab::lessons {
namespace {

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "true or false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

// Joins the pieces of a message (appends: GCC 12 warns, wrongly, of overlapping copies in
// chains of operator+ on strings).
std::string words(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

}  // namespace

TomlBlock::TomlBlock(const std::string& body, std::string file, int first_line)
    : file_(std::move(file)), first_line_(first_line) {
  try {
    root_ = std::make_shared<const toml::table>(toml::parse(body));
  } catch (const toml::parse_error& e) {
    const int line = first_line_ + static_cast<int>(e.source().begin.line) - 1;
    throw LessonError(file_, line, words({"not valid TOML: ", e.description()}));
  }
  table_ = root_.get();
}

TomlBlock::TomlBlock(const TomlBlock& parent, const toml::table& table)
    : root_(parent.root_), table_(&table), file_(parent.file_), first_line_(parent.first_line_) {}

int TomlBlock::line_of(const toml::node& node) const {
  const auto line = static_cast<int>(node.source().begin.line);
  return line > 0 ? first_line_ + line - 1 : first_line_;
}

void TomlBlock::fail(int line, const std::string& what) const {
  throw LessonError(file_, line, what);
}

void TomlBlock::only(std::initializer_list<std::string_view> allowed,
                     std::string_view where) const {
  only(std::vector<std::string>(allowed.begin(), allowed.end()), where);
}

void TomlBlock::only(const std::vector<std::string>& allowed, std::string_view where) const {
  for (const auto& [key, value] : *table_) {
    bool known = false;
    for (const std::string& a : allowed) known = known || key.str() == a;
    if (known) continue;
    std::string list;
    for (const std::string& a : allowed) list.append(list.empty() ? "" : ", ").append(a);
    fail(line_of(value), words({"unknown key `", key.str(), "` in ", where,
                                files::field_words::did_you_mean_key(key.str(), allowed),
                                " (expected one of: ", list, ")"}));
  }
}

const toml::node& TomlBlock::node(std::string_view key) const { return *table_->get(key); }

nlohmann::json TomlBlock::as_json() const {
  const auto value = [this](const auto& self, const toml::node& n) -> nlohmann::json {
    if (n.is_integer()) return *n.value<std::int64_t>();
    if (n.is_floating_point()) return *n.value<double>();
    if (n.is_string()) return std::string(*n.value<std::string_view>());
    if (n.is_boolean()) return *n.value<bool>();
    if (n.is_array()) {
      nlohmann::json list = nlohmann::json::array();
      for (const toml::node& entry : *n.as_array()) list.push_back(self(self, entry));
      return list;
    }
    fail(line_of(n), words({"a ", type_name(n),
                            " is not a value here: give a number, a text, "
                            "true or false, or a list"}));
  };
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, v] : *table_) object[std::string(key.str())] = value(value, v);
  return object;
}

std::optional<std::string> TomlBlock::text(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const toml::node& n = node(key);
  if (!n.is_string()) {
    fail(line_of(n), words({"`", key, "` ", files::field_words::not_text()}));
  }
  return std::string(*n.value<std::string_view>());
}

std::string TomlBlock::required_text(std::string_view key, std::string_view what) const {
  std::optional<std::string> t = text(key);
  if (!t || t->empty())
    fail(line(), words({"`", key, "` ", files::field_words::missing(), ": ", what}));
  return *t;
}

std::optional<std::int64_t> TomlBlock::integer(std::string_view key, std::int64_t lo,
                                               std::int64_t hi) const {
  if (!has(key)) return std::nullopt;
  const toml::node& n = node(key);
  if (!n.is_integer()) {
    fail(line_of(n), words({"`", key, "` ", files::field_words::not_whole()}));
  }
  const std::int64_t v = *n.value<std::int64_t>();
  if (v < lo || v > hi) {
    fail(line_of(n), words({"`", key, "` ", files::field_words::outside(v, lo, hi)}));
  }
  return v;
}

std::optional<double> TomlBlock::number(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const toml::node& n = node(key);
  if (!n.is_number()) {
    fail(line_of(n), words({"`", key, "` ", files::field_words::not_number()}));
  }
  const double v = *n.value<double>();
  if (!std::isfinite(v)) {
    fail(line_of(n), words({"`", key, "` ",
                            files::field_words::not_finite(files::field_words::number_text(v))}));
  }
  return v;
}

std::optional<bool> TomlBlock::boolean(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const toml::node& n = node(key);
  if (!n.is_boolean()) {
    fail(line_of(n), words({"`", key, "` ", files::field_words::not_flag()}));
  }
  return *n.value<bool>();
}

std::vector<std::string> TomlBlock::texts(std::string_view key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const toml::node& n = node(key);
  const toml::array* a = n.as_array();
  if (!a) fail(line_of(n), words({"`", key, "` must be an array of strings"}));
  for (const toml::node& item : *a) {
    if (!item.is_string()) {
      fail(line_of(item), words({"`", key, "` must hold strings, not ", type_name(item)}));
    }
    out.emplace_back(*item.value<std::string_view>());
  }
  return out;
}

std::vector<std::int64_t> TomlBlock::integers(std::string_view key, std::int64_t lo,
                                              std::int64_t hi) const {
  std::vector<std::int64_t> out;
  if (!has(key)) return out;
  const toml::node& n = node(key);
  if (n.is_integer()) return {*integer(key, lo, hi)};
  const toml::array* a = n.as_array();
  if (!a || a->empty()) fail(line_of(n), words({"`", key, "` must be integers, as [1024, 512]"}));
  for (const toml::node& item : *a) {
    // Not value<int64_t>() before is_integer(): toml++ converts a float to an integer unchecked
    // (2e49 is undefined behaviour).
    const std::optional<std::int64_t> v =
        item.is_integer() ? item.value<std::int64_t>() : std::nullopt;
    if (!v || *v < lo || *v > hi) {
      fail(line_of(item), words({"`", key, "` must hold integers from ", std::to_string(lo), " to ",
                                 std::to_string(hi)}));
    }
    out.push_back(*v);
  }
  return out;
}

std::vector<TomlBlock> TomlBlock::tables(std::string_view key) const {
  std::vector<TomlBlock> out;
  if (!has(key)) return out;
  const toml::node& n = node(key);
  const toml::array* a = n.as_array();
  if (!a) fail(line_of(n), words({"`", key, "` must be a list of tables"}));
  for (const toml::node& item : *a) {
    const toml::table* t = item.as_table();
    if (!t) fail(line_of(item), words({"`", key, "` must hold tables, not ", type_name(item)}));
    out.emplace_back(*this, *t);
  }
  return out;
}

std::optional<TomlBlock> TomlBlock::sub_table(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  const toml::node& n = node(key);
  const toml::table* t = n.as_table();
  if (!t) fail(line_of(n), words({"`", key, "` ", files::field_words::not_table(key)}));
  return TomlBlock(*this, *t);
}

}  // namespace mirrorlab::lessons
