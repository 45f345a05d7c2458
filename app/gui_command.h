// `mirrorlab gui`: the training of `train` (same flags), shown in a Dear ImGui window.
#pragma once

#include <string>

#include "app/flags/cli_declarations.h"
#include "app/flags/train_flags.h"
#include "gui/window/app_options.h"

namespace mirrorlab::app {

struct GuiOptions {
  TrainOptions train;
  gui::AppOptions app;         // a plain struct: this compiles whether or not the GUI is built
  std::string lesson;          // --lesson: an id of the course or a lesson file
  std::string lessons_folder;  // --lessons
  bool check_display = false;
};

CLI::App* add_gui_command(CLI::App& app, GuiOptions& options);
// Returns the exit status: 0, 1 (a scripted run failed), 2 (bad flags, no display, no GUI
// in this build).
int run_gui(const GuiOptions& options);

}  // namespace mirrorlab::app
