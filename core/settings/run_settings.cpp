#include "core/settings/run_settings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include "files/field_words.h"
#include "files/json_fields.h"
#include "nlohmann/json.hpp"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::core {
namespace {

using nlohmann::json;
namespace words = files::field_words;

template <class T>
constexpr bool kIsList = false;
template <class T>
constexpr bool kIsList<std::vector<T>> = true;

template <class T>
constexpr bool kHasNames = requires(T value) {
  choice_names(value);
};

// The shortest text that reads back to `value`, a double or a float ("1e-09", "0.001", "20";
// not 0.0010000000474 for the float 0.001).
template <class T>
std::string number_text(T value) {
  char text[48];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string range_text(const SettingInfo& info, bool whole) {
  return std::string("give ") + (whole ? "a whole number" : "a number") + " from " +
         number_text(info.min) + " to " +
         (std::isinf(info.max) ? std::string("the largest") : number_text(info.max));
}

template <class T>
std::string value_text(const T& value) {
  if constexpr (kHasNames<T>) {
    return choice_name(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "on" : "off";
  } else if constexpr (std::is_same_v<T, float>) {
    return number_text(value);
  } else if constexpr (kIsList<T>) {
    std::string text;
    for (const auto& v : value) {
      // Appended piece by piece: GCC 12 warns (wrongly) on "," + string.
      if (!text.empty()) text += ',';
      text += std::to_string(v);
    }
    return text.empty() ? "(none)" : text;
  } else {
    return std::to_string(value);
  }
}

template <class T>
json value_json(const T& value) {
  if constexpr (kHasNames<T>) {
    return choice_name(value);
  } else if constexpr (std::is_same_v<T, float>) {
    // As the float's shortest text ("0.001", not 0.0010000000474974513), which reads back to
    // the same float.
    return std::stod(number_text(value));
  } else {
    return value;
  }
}

// One number of a setting (or of a list's entry), read from `j` as T within the range.
template <class T>
T read_number(const json& j, const SettingInfo& info) {
  const std::string key = info.key;
  if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) {
      throw SettingError(key, words::not_number() + ": " + range_text(info, false));
    }
    const double v = j.get<double>();
    if (!std::isfinite(v) || v < info.min || v > info.max) {
      throw SettingError(key, words::out_of_range(number_text(v)) + ": " + range_text(info, false));
    }
    return static_cast<T>(v);
  } else {
    // A whole number written 2.0 or 1e3 (TOML's and some JSON writers' floats) is that number;
    // past 2^53 a double holds no exact whole number to give.
    if (const std::optional<double> whole = files::whole_float(j)) {
      const double v = *whole;
      constexpr double kExact = 9007199254740992.0;  // 2^53
      if (v < info.min || v > info.max || std::fabs(v) > kExact ||
          (std::is_unsigned_v<T> && v < 0)) {
        throw SettingError(key, words::out_of_range(j.dump()) + ": " + range_text(info, true));
      }
      return static_cast<T>(v);
    }
    if (!j.is_number_integer()) {
      throw SettingError(key, (j.is_number() ? words::not_whole(j.dump()) : words::not_whole()) +
                                  ": " + range_text(info, true));
    }
    // Unsigned JSON numbers past INT64_MAX are only for unsigned settings (the seed).
    if (j.is_number_unsigned()) {
      const std::uint64_t v = j.get<std::uint64_t>();
      if (static_cast<double>(v) < info.min || static_cast<double>(v) > info.max ||
          v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
        throw SettingError(key,
                           words::out_of_range(std::to_string(v)) + ": " + range_text(info, true));
      }
      return static_cast<T>(v);
    }
    const std::int64_t v = j.get<std::int64_t>();
    if (static_cast<double>(v) < info.min || static_cast<double>(v) > info.max ||
        (std::is_unsigned_v<T> && v < 0)) {
      throw SettingError(key,
                         words::out_of_range(std::to_string(v)) + ": " + range_text(info, true));
    }
    return static_cast<T>(v);
  }
}

template <class T>
T read_value(const json& j, const SettingInfo& info) {
  const std::string key = info.key;
  if constexpr (kHasNames<T>) {
    if (!j.is_string()) throw SettingError(key, "is not a name: choose " + choice_names_text<T>());
    if (const std::optional<T> v = find_choice<T>(j.get<std::string>())) return *v;
    throw SettingError(key, words::not_one_of(j.get<std::string>(), choice_names_text<T>()));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) throw SettingError(key, words::not_text());
    const std::string v = j.get<std::string>();
    if (info.choices != nullptr &&
        std::find(info.choices->begin(), info.choices->end(), v) == info.choices->end()) {
      std::string names;
      for (const std::string& c : *info.choices) names += (names.empty() ? "" : ", ") + c;
      throw SettingError(key, words::not_one_of(v, names));
    }
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) throw SettingError(key, words::not_flag());
    return j.get<bool>();
  } else if constexpr (kIsList<T>) {
    // One number stands for a list of one, as lesson files write `memory_mib = 512`.
    if (j.is_number()) return T{read_number<typename T::value_type>(j, info)};
    if (!j.is_array()) throw SettingError(key, words::not_list() + ": " + range_text(info, true));
    if (j.size() > 64) throw SettingError(key, words::too_many(j.size(), 64));
    T values;
    for (const json& entry : j) values.push_back(read_number<typename T::value_type>(entry, info));
    return values;
  } else {
    return read_number<T>(j, info);
  }
}

}  // namespace

SettingError::SettingError(std::string key, std::string problem)
    : std::invalid_argument("`" + key + "`: " + problem),
      key_(std::move(key)),
      problem_(std::move(problem)) {}

const std::vector<std::string>& allreduce_choices() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n{std::string(vgpu::kAutoAllReduce)};
    for (const std::string& a : vgpu::all_reduce_names()) n.push_back(a);
    return n;
  }();
  return names;
}

const std::vector<std::string>& backend_choices() {
  static const std::vector<std::string> names{"cpu", "cuda", "auto"};
  return names;
}

std::vector<std::string> setting_keys() {
  std::vector<std::string> keys;
  const RunSettings s;
  for_each_setting(s, [&](const SettingInfo& info, const auto&) { keys.emplace_back(info.key); });
  return keys;
}

json settings_json(const RunSettings& settings) {
  json object = json::object();
  for_each_setting(settings, [&](const SettingInfo& info, const auto& value) {
    object[info.key] = value_json(value);
  });
  return object;
}

RunSettings read_settings_json(const json& object, RunSettings base, bool every_key) {
  if (!object.is_object()) throw SettingError("settings", words::not_object());
  for_each_setting(base, [&](const SettingInfo& info, auto& value) {
    const auto found = object.find(info.key);
    if (found == object.end()) {
      if (every_key) throw SettingError(info.key, words::missing());
      return;
    }
    value = read_value<std::decay_t<decltype(value)>>(*found, info);
  });
  return base;
}

std::vector<std::string> unknown_setting_keys(const json& object,
                                              const std::vector<std::string>& also_allowed) {
  const std::vector<std::string> keys = setting_keys();
  std::vector<std::string> unknown;
  for (const auto& [key, _] : object.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end() &&
        std::find(also_allowed.begin(), also_allowed.end(), key) == also_allowed.end()) {
      unknown.push_back(key);
    }
  }
  return unknown;
}

std::vector<SettingDifference> setting_differences(const RunSettings& first,
                                                   const RunSettings& second) {
  std::vector<std::pair<SettingInfo, std::string>> a;
  for_each_setting(first, [&](const SettingInfo& info, const auto& value) {
    a.emplace_back(info, value_text(value));
  });
  std::vector<SettingDifference> differences;
  std::size_t i = 0;
  for_each_setting(second, [&](const SettingInfo& info, const auto& value) {
    const std::string text = value_text(value);
    if (a[i].second != text) differences.push_back({info.key, info.role, a[i].second, text});
    ++i;
  });
  return differences;
}

std::string settings_lines(const RunSettings& settings,
                           const std::function<std::string(const std::string&)>& label) {
  std::string lines;
  for_each_setting(settings, [&](const SettingInfo& info, const auto& value) {
    lines += (label ? label(info.key) : std::string(info.key)) + " " + value_text(value) + "\n";
  });
  return lines;
}

std::vector<vgpu::LogicalDeviceConfiguration> logical_devices(const DeviceSettings& d,
                                                              int default_count) {
  const std::size_t limits = d.memory_limits_mib.size();
  const int count = d.gpus > 0 ? d.gpus : limits > 1 ? static_cast<int>(limits) : default_count;
  std::vector<vgpu::LogicalDeviceConfiguration> devices(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < devices.size() && limits > 0; ++i) {
    devices[i].memory_limit_mib =
        static_cast<std::size_t>(d.memory_limits_mib[std::min(i, limits - 1)]);
  }
  return devices;
}

StrategyOptions strategy_options(const RunSettings& s) {
  StrategyOptions o;
  o.model = s.model;
  o.optimizer = s.optimizer;
  o.all_reduce = s.allreduce;
  o.seed = s.seed;
  o.loss_scaling = s.loss_scaling;
  o.packs = s.packs;
  o.cuda_graphs = s.devices.cuda_graphs;
  return o;
}

FitOptions fit_options(const RunSettings& s) {
  FitOptions f;
  f.epochs = s.epochs;
  f.max_steps = s.max_steps;
  f.batch_per_replica = s.batch_per_replica;
  f.seed = s.seed;
  return f;
}

}  // namespace mirrorlab::core
