#include "files/json_fields.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "files/field_words.h"

namespace mirrorlab::files {
namespace {

using nlohmann::json;
namespace words = field_words;

[[noreturn]] void refuse(const FieldFailure& fail, const std::string& name,
                         const std::string& problem) {
  fail(name, problem);
  throw std::runtime_error((name.empty() ? "the document" : name) + " " + problem);
}

}  // namespace

JsonFields::JsonFields(const json& value, std::string path, FieldFailure fail)
    : object_(&value), path_(std::move(path)), fail_(std::move(fail)) {
  if (!value.is_object()) refuse(fail_, path_, words::not_object());
}

std::string JsonFields::name(std::string_view key) const {
  if (key.empty()) return path_;
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonFields::fail(std::string_view key, const std::string& problem) const {
  refuse(fail_, name(key), problem);
}

const json& JsonFields::at(std::string_view key) const {
  const auto it = object_->find(key);
  if (it == object_->end()) fail(key, words::missing());
  return *it;
}

bool JsonFields::has(std::string_view key) const {
  const auto it = object_->find(key);
  return it != object_->end() && !it->is_null();
}

namespace {

// Whether `x` (whole) lies in [min, max], compared where a double cannot round past them.
bool whole_within(double x, long double min, long double max) {
  return static_cast<long double>(x) >= min && static_cast<long double>(x) <= max;
}

}  // namespace

std::optional<double> whole_float(const json& value) {
  if (!value.is_number_float()) return std::nullopt;
  const double x = value.get<double>();
  if (!std::isfinite(x) || x != std::floor(x)) return std::nullopt;
  return x;
}

// Within [min, max] a whole float counts as that number, else it is said outside them.
std::int64_t JsonFields::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  const json& v = at(key);
  if (const std::optional<double> x = whole_float(v)) {
    if (!whole_within(*x, static_cast<long double>(min), static_cast<long double>(max)) ||
        *x >= 0x1p63) {
      fail(key, words::outside(v.dump(), std::to_string(min), std::to_string(max)));
    }
    return static_cast<std::int64_t>(*x);
  }
  if (!v.is_number_integer())
    fail(key, v.is_number() ? words::not_whole(v.dump()) : words::not_whole());
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, words::outside(v.dump(), std::to_string(min), std::to_string(max)));
  }
  const std::int64_t value = v.get<std::int64_t>();
  if (value < min || value > max) fail(key, words::outside(value, min, max));
  return value;
}

std::uint64_t JsonFields::unsigned_integer(std::string_view key, std::uint64_t max) const {
  const json& v = at(key);
  if (const std::optional<double> x = whole_float(v)) {
    if (!whole_within(*x, 0, static_cast<long double>(max)) || *x >= 0x1p64) {
      fail(key, words::outside(v.dump(), "0", std::to_string(max)));
    }
    return static_cast<std::uint64_t>(*x);
  }
  if (!v.is_number_integer())
    fail(key, v.is_number() ? words::not_whole(v.dump()) : words::not_whole());
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    fail(key, words::outside(v.dump(), "0", std::to_string(max)));
  }
  return v.get<std::uint64_t>();
}

double JsonFields::real(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_number()) fail(key, words::not_number());
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, words::not_finite(words::number_text(x)));
  return x;
}

double JsonFields::real(std::string_view key, double min, double max, bool zero_too) const {
  const double x = real(key);
  if (zero_too && x == 0) return 0;
  if (x < min || x > max) fail(key, words::outside(x, min, max) + (zero_too ? " and not 0" : ""));
  return x;
}

std::string JsonFields::text(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_string()) fail(key, words::not_text());
  return v.get<std::string>();
}

bool JsonFields::flag(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_boolean()) fail(key, words::not_flag());
  return v.get<bool>();
}

JsonFields JsonFields::object(std::string_view key) const {
  return JsonFields(at(key), name(key), fail_);
}

JsonList JsonFields::list(std::string_view key, std::size_t most) const {
  const json& v = at(key);
  if (!v.is_array()) fail(key, words::not_list());
  if (v.size() > most) fail(key, words::too_many(v.size(), most));
  return JsonList(v, name(key), fail_);
}

JsonList::JsonList(const json& array, std::string path, FieldFailure fail)
    : array_(&array), path_(std::move(path)), fail_(std::move(fail)) {}

std::string JsonList::name(std::size_t i) const { return path_ + "[" + std::to_string(i) + "]"; }

void JsonList::fail(const std::string& problem) const { refuse(fail_, path_, problem); }

void JsonList::fail(std::size_t i, const std::string& problem) const {
  refuse(fail_, name(i), problem);
}

std::size_t JsonList::size() const { return array_->size(); }

const json& JsonList::at(std::size_t i) const { return array_->at(i); }

JsonFields JsonList::object(std::size_t i) const { return JsonFields(at(i), name(i), fail_); }

std::string JsonList::text(std::size_t i) const {
  if (!at(i).is_string()) fail(i, words::not_text());
  return at(i).get<std::string>();
}

}  // namespace mirrorlab::files
