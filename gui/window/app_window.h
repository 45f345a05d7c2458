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

// The window on `session`, a run that another thread trains (TrainingSession's watching
// constructor; mirrorlab.gui.watch in Python), until it is closed (options.close_requested, or
// the user). The panels show the run as it goes; nothing in the window trains, pauses or changes
// it. On any thread, one window at a time in a process (Dear ImGui's context is the process's).
// Returns as run_app; throws NoDisplayError, and std::invalid_argument for options that would
// drive the run (a lesson, scripted steps).
int watch_run(core::TrainingSession& session, const AppOptions& options);

}  // namespace mirrorlab::gui
