#include "gui/window/pressed_keys.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/session/text/console_text.h"

namespace mirrorlab::gui {
namespace {

int key_code(const std::string& name) {
  static const std::pair<const char*, int> kKeys[] = {
      {"space", GLFW_KEY_SPACE},  {"pgdn", GLFW_KEY_PAGE_DOWN},
      {"pgup", GLFW_KEY_PAGE_UP}, {"f5", GLFW_KEY_F5},
      {"t", GLFW_KEY_T},          {"n", GLFW_KEY_N},
      {"left", GLFW_KEY_LEFT},    {"right", GLFW_KEY_RIGHT},
  };
  for (const auto& [key, code] : kKeys) {
    if (name == key) return code;
  }
  if (name.size() == 1 && name[0] >= '0' && name[0] <= '9') return GLFW_KEY_0 + (name[0] - '0');
  return -1;
}

}  // namespace

std::vector<int> pressed_keys(const std::string& list) {
  std::vector<int> keys;
  std::size_t from = 0;
  while (from <= list.size()) {
    const std::size_t comma = std::min(list.find(',', from), list.size());
    std::string name = list.substr(from, comma - from);
    name.erase(std::remove_if(name.begin(), name.end(),
                              [](unsigned char c) { return std::isspace(c) != 0; }),
               name.end());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const int code = key_code(name);
    if (code < 0) {
      // Where in the list, rather than the list again: it may be thousands of keys long.
      const std::string where =
          list.size() <= 60 ? list : "key " + std::to_string(keys.size() + 1) + " of the list";
      const std::size_t cut = core::character_boundary(name, 40);
      const std::string named = name.substr(0, cut) + (cut < name.size() ? "..." : "");
      throw std::invalid_argument(
          where + ": " +
          (name.empty() ? "an empty key name between commas" : "no key named '" + named + "'") +
          "; the keys are " + kPressableKeys + ", separated by commas (space,space,pgup)");
    }
    keys.push_back(code);
    from = comma + 1;
  }
  return keys;
}

}  // namespace mirrorlab::gui
