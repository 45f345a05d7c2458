// Whether there is a display to open the window on, and the error when there is none.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mirrorlab::gui {

// No display to open a window on (no $DISPLAY, or the X server refused); what() says what to do
// at the command line, reason() only what GLFW said (for a caller that says what to do itself).
class NoDisplayError : public std::runtime_error {
 public:
  NoDisplayError(const std::string& what, std::string reason = "")
      : std::runtime_error(what), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Whether a window can be opened here (a display that answers); if not, *why says so.
bool can_open_window(std::string* why);

// "cannot open a window: <why>. The GUI needs a display: ..." with what to do at the command line.
std::string no_display_message(const std::string& why);

}  // namespace mirrorlab::gui
