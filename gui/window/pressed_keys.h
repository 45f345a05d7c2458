// The keys a scripted run presses (`mirrorlab gui --press space,pgdn`), by the names its help
// gives: what a presenter presses in class, so that tests and pictures go through the window's
// own key handling rather than around it.
#pragma once

#include <string>
#include <vector>

namespace mirrorlab::gui {

// The names a script may press, for the help and the errors.
inline constexpr const char* kPressableKeys = "space, pgdn, pgup, f5, t, n, left, right, 0-9";

// The keys of `list` (names separated by commas, case ignored) as the window's key codes, in
// turn. Throws std::invalid_argument naming a key it does not know, or an empty name.
std::vector<int> pressed_keys(const std::string& list);

}  // namespace mirrorlab::gui
