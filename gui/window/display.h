// Whether there is a display to open the window on, and the error when there is none.
#pragma once

#include <stdexcept>
#include <string>

namespace mirrorlab::gui {

// No display to open a window on (no $DISPLAY, or the X server refused); what() says what to do.
class NoDisplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether a window can be opened here (a display that answers); if not, *why says so.
bool can_open_window(std::string* why);

}  // namespace mirrorlab::gui
