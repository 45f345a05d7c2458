#include "app/command_line.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "app/advice.h"
#include "app/flags/flags.h"
#include "app/output/terminal_width.h"
#include "core/session/text/console_text.h"
#include "files/field_words.h"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::app {

namespace {

// CLI11's help, but a flag with a "no" form shows its two names without the value each sets:
// "--overlap,--no-overlap{false}" read as if the flag were off unless given (it is on; its help
// says which is the default).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, is_positional);
    if (is_positional) return name;
    for (std::size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      const std::size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  // Every line within the terminal's width (terminal_width(): 80 where it is not a terminal):
  // descriptions wrapped at their spaces under their column, the command's description and footer
  // at the margin.
  std::string make_description(const CLI::App* app) const override {
    return wrapped(CLI::Formatter::make_description(app), width());
  }
  std::string make_option_desc(const CLI::Option* option) const override {
    return wrapped(CLI::Formatter::make_option_desc(option), description_width());
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             wrapped(sub->get_description(), description_width()), column_width_);
    return out.str();
  }
  std::string make_footer(const CLI::App* app) const override {
    return wrapped(CLI::Formatter::make_footer(app), width());
  }

 private:
  // A terminal narrower than 60 columns wraps the help's lines itself: a description 20 columns
  // wide would read worse.
  static int width() { return std::max(terminal_width(), 60); }
  int description_width() const { return width() - static_cast<int>(column_width_); }
  // Each line of `text` wrapped to `width`, its own indent kept on the lines it wraps into.
  static std::string wrapped(const std::string& text, int width) {
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t lead = line.find_first_not_of(' ');  // a blank line: none
      const std::string indent(lead == std::string::npos ? 0 : lead, ' ');
      out += indent +
             core::wrap_line(line.substr(indent.size()), width, static_cast<int>(indent.size()),
                             indent) +
             "\n";
    }
    if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
    return out;
  }
};

}  // namespace

CommandLine::CommandLine()
    : app_(std::make_unique<CLI::App>(
          "mirrorlab: watch and run mirrored (synchronous data-parallel) training, as "
          "TensorFlow's MirroredStrategy does it, on virtual GPUs",
          "mirrorlab")) {
  app_->require_subcommand(1);
  app_->formatter(std::make_shared<HelpFormatter>());  // before the commands, which take it on
  train_ = add_train_command(*app_, train_options);
  bench_allreduce_ = add_bench_command(*app_, bench_options);
  compare_ = add_compare_command(*app_, compare_options);
  devices_ = add_devices_command(*app_, devices_options);
  gui_ = add_gui_command(*app_, gui_options);
#ifdef MIRRORLAB_HAVE_LESSONS
  lesson_ = add_lesson_command(*app_, lesson_options, lesson_commands_);
#endif
}

CommandLine::~CommandLine() = default;

std::string CommandLine::message_for(const CLI::ParseError& error, int* status) {
  *status = error.get_exit_code() == 0 ? 0 : 2;
  if (*status == 0) return "";  // --help: printed by CLI11
  // The command that was being parsed: the deepest one chosen.
  const CLI::App* deepest = &chosen_command(*app_);
  const bool needs_command = deepest->get_require_subcommand_min() > 0 &&
                             dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  if (!needs_command) return describe_parse_failure(*app_, error);
  std::vector<std::string> names;
  std::string commands;
  for (const CLI::App* sub : deepest->get_subcommands({})) {
    names.push_back(sub->get_name());
    commands += (commands.size() ? ", " : "") + names.back();
  }
  const std::string path = command_path(*app_);
  const std::vector<std::string> extra = deepest->remaining();
  if (!extra.empty() && !extra.front().empty() && extra.front()[0] != '-') {
    return path + ": '" + extra.front() + "' is not a command" +
           files::field_words::did_you_mean(extra.front(), names) + "; the commands are " +
           commands + ". Run '" + path + " --help' for what each does.\n";
  }
  // Its help, its usage line with the command's whole name ("mirrorlab lesson"), as typed.
  const std::string parent = deepest == app_.get() ? "" : path.substr(0, path.rfind(' '));
  return deepest->help(parent) + "\n" + path + ": choose a command (" + commands +
         "), for example: " +
         (deepest == app_.get()
              ? "mirrorlab train --help"
              : path + " " + deepest->get_subcommands({}).front()->get_name() + " --help") +
         "\n";
}

int CommandLine::parse(int argc, const char* const* argv) {
  try {
    app_->parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    int status = 0;
    const std::string message = message_for(e, &status);
    if (status == 0) return app_->exit(e);  // --help
    std::fflush(stdout);
    std::fputs(message.c_str(), stderr);
    return status;
  }
}

std::string CommandLine::parse_error(const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app_->parse(reversed);
    return "";
  } catch (const CLI::ParseError& e) {
    int status = 0;
    std::string message = message_for(e, &status);
    return status == 0 ? "(help)" : message;
  }
}

std::string CommandLine::explain(const std::exception& error) const {
  AdviceContext context;
  if (*train_) context = {&train_options.settings.devices, &train_options, false};
  if (*bench_allreduce_) context = {&bench_options.devices, nullptr, true};
  if (*compare_) context = {&compare_options.devices, nullptr, true};
  if (*devices_) context = {&devices_options.devices, nullptr, false};
  if (*gui_) context = {&gui_options.train.settings.devices, &gui_options.train, false};
  return app::explain(error, context);
}

int CommandLine::run() {
  if (*train_) return run_train(train_options);
  // The window on worker 0, the other workers following it (app/gui_command.cpp).
  if (*gui_) return run_gui(gui_options);
  // Only train and gui run as several workers; the others would run once per mpirun rank, each
  // alone.
  if (const vgpu::Launch launch = vgpu::launched_by(); launch.world_size > 1) {
    if (launch.rank == 0) {
      std::fprintf(stderr,
                   "%s: runs as one process, and %s started %d: under mpirun only "
                   "'mirrorlab train' and 'mirrorlab gui' run as several workers; run this "
                   "command without mpirun\n",
                   command_path(*app_).c_str(), launch.launcher.c_str(), launch.world_size);
    }
    return 2;
  }
  if (*bench_allreduce_) return run_bench_allreduce(bench_options);
  if (*compare_) return run_compare(compare_options);
  if (*devices_) return run_devices(devices_options);
#ifdef MIRRORLAB_HAVE_LESSONS
  if (*lesson_) return run_lesson_command(lesson_options, lesson_commands_);
#endif
  return 2;
}

}  // namespace mirrorlab::app
