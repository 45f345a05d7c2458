// The `mirrorlab gui` window: GLFW + OpenGL 3 + Dear ImGui, a TrainingSession training in the
// background, and the panels drawn from one snapshot per frame.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/io/dataset.h"
#include "core/session/training_session.h"
#include "gui/window/app_options.h"

namespace mirrorlab::gui {

// No display to open a window on (no $DISPLAY, or the X server refused); what() says what to do.
class NoDisplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "" when the window's own flags fit together (a --panel that exists), else what is wrong.
std::string check_app_options(const AppOptions& options);

// Whether a window can be opened here (a display that answers); if not, *why says so.
bool can_open_window(std::string* why);

// Runs the window until it is closed (or the script ends). Returns the exit status: 0, or 1
// when a scripted run timed out or a file could not be written. Throws NoDisplayError.
int run_app(std::shared_ptr<const core::FashionMnist> data, const core::SessionConfig& config,
            const AppOptions& options);

}  // namespace mirrorlab::gui
