// The `mirrorlab gui` window: GLFW + OpenGL 3 + Dear ImGui, a TrainingSession training in the
// background, and the panels drawn from one snapshot per frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/dataset.h"
#include "core/session/training_session.h"
#include "gui/window/app_options.h"
#include "gui/window/display.h"  // NoDisplayError, can_open_window

namespace mirrorlab::gui {

// "" when the window's own flags fit together (a --panel that exists), else what is wrong.
std::string check_app_options(const AppOptions& options);

// Runs the window until it is closed (or the script ends). Returns the exit status: 0, or 1
// when a scripted run timed out or a file could not be written. Throws NoDisplayError.
int run_app(std::shared_ptr<const core::FashionMnist> data, const core::SessionConfig& config,
            const AppOptions& options);

}  // namespace mirrorlab::gui
