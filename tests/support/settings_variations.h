// For tests that walk every run setting (core/settings/run_settings.h): one RunSettings per
// setting, each differing from a base in that setting alone, with a value every face accepts
// (within the settings' ranges and a lesson's limits). A setting added to for_each_setting is
// walked by every such test without a change here.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "core/settings/run_settings.h"

namespace mirrorlab::settings_test {

template <class T>
void vary(const core::SettingInfo& info, T& value) {
  if constexpr (requires { core::choice_names(value); }) {
    const auto names = core::choices_of<T>();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].value == value) {
        value = names[(i + 1) % names.size()].value;
        return;
      }
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    const std::vector<std::string>& choices = *info.choices;
    value = choices[0] == value ? choices[1] : choices[0];
  } else if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_floating_point_v<T>) {
    value = value == T(0.5) ? T(0.25) : T(0.5);
  } else if constexpr (requires { value.push_back(1); }) {
    value = value.size() == 1 && value[0] == 1 ? T{2} : T{1};
  } else {
    value = value == 1 ? 2 : 1;
  }
}

struct Variation {
  std::string key;
  core::SettingRole role;
  core::RunSettings settings;
};

// One variation of `base` per setting, in for_each_setting's order.
inline std::vector<Variation> every_setting_varied(const core::RunSettings& base) {
  std::vector<Variation> out;
  const std::vector<std::string> keys = core::setting_keys();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    core::RunSettings s = base;
    std::size_t i = 0;
    core::SettingRole role = core::SettingRole::kChangeable;
    core::for_each_setting(s, [&](const core::SettingInfo& info, auto& value) {
      if (i++ != k) return;
      vary(info, value);
      role = info.role;
    });
    out.push_back({keys[k], role, s});
  }
  return out;
}

}  // namespace mirrorlab::settings_test
