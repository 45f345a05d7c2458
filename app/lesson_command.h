// `mirrorlab lesson list | run ID | check FILE`: the course in the terminal. `run` plays a
// lesson step by step on CPU-backed virtual GPUs (the text, the live run, the questions asked
// before their answers, the checks); Enter goes on. --non-interactive asks nothing, runs every
// check and exits 1 if one fails (ctest plays every lesson so).
#pragma once

#include <string>
#include <vector>

#include "app/flags/cli_declarations.h"

namespace mirrorlab::app {

struct LessonOptions {
  std::string lesson;  // run: an id, or a lesson file's path
  std::string file;    // check
  std::string folder;  // empty: the built-in lessons/
  std::string data_dir;
  bool non_interactive = false;
  int width = 0;  // columns the text is wrapped to; 0: the terminal's (terminal_width())
};

struct LessonCommands {
  CLI::App* list = nullptr;
  CLI::App* run = nullptr;
  CLI::App* check = nullptr;
};

CLI::App* add_lesson_command(CLI::App& app, LessonOptions& options, LessonCommands& commands);
int run_lesson_command(const LessonOptions& options, const LessonCommands& commands);

}  // namespace mirrorlab::app
