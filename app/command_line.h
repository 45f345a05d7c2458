// The mirrorlab command line: every command and its flags in one CLI11 app, parsed here and run
// by main(). Tests build one to parse command lines without running them.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "app/compare/bench_command.h"
#include "app/compare/compare_command.h"
#include "app/devices_command.h"
#include "app/flags/cli_declarations.h"
#include "app/gui_command.h"
#ifdef MIRRORLAB_HAVE_LESSONS
#include "app/lesson_command.h"
#endif
#include "app/train/train_command.h"

namespace mirrorlab::app {

class CommandLine {
 public:
  CommandLine();
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;  // the options are bound to members by reference
  CommandLine& operator=(const CommandLine&) = delete;

  // Parses argv. Returns -1 when a command should run (run() next); otherwise the exit status
  // after having printed what was asked (--help: 0) or what was wrong (2), to stdout or stderr.
  int parse(int argc, const char* const* argv);
  // For tests: "" when `args` (without the program name) parse, else the message a user sees.
  std::string parse_error(const std::vector<std::string>& args);
  // Runs the parsed command; returns its exit status. Throws what the command throws.
  int run();
  // What went wrong in the command that ran, with what to change on its command line.
  std::string explain(const std::exception& error) const;

  CLI::App& app() { return *app_; }
  TrainOptions train_options;
  BenchAllReduceOptions bench_options;
  CompareOptions compare_options;
  DevicesOptions devices_options;
  GuiOptions gui_options;
#ifdef MIRRORLAB_HAVE_LESSONS
  LessonOptions lesson_options;
#endif

 private:
  // "" or the message for a parse error (a missing or unknown command among them); sets
  // *status to what the process should exit with.
  std::string message_for(const CLI::ParseError& error, int* status);

  std::unique_ptr<CLI::App> app_;
  CLI::App* train_ = nullptr;
  CLI::App* bench_allreduce_ = nullptr;
  CLI::App* compare_ = nullptr;
  CLI::App* devices_ = nullptr;
  CLI::App* gui_ = nullptr;
#ifdef MIRRORLAB_HAVE_LESSONS
  CLI::App* lesson_ = nullptr;
  LessonCommands lesson_commands_;
#endif
};

}  // namespace mirrorlab::app
