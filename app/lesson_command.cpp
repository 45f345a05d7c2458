#include "app/lesson_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "app/flags/flags.h"
#include "app/output/interrupt.h"
#include "app/output/lesson_text.h"
#include "app/output/printed_text.h"
#include "app/output/terminal_width.h"
#include "core/io/dataset.h"
#include "core/session/text/console_text.h"
#include "lessons/player/player.h"

namespace mirrorlab::app {
namespace {

std::filesystem::path folder_of(const LessonOptions& o) {
  return o.folder.empty() ? lessons::default_lesson_folder() : std::filesystem::path(o.folder);
}

lessons::Lesson find_lesson(const LessonOptions& o) {
  return lessons::find_lesson(o.lesson, folder_of(o));
}

// Each lesson on two lines or three, within the terminal's width: its number and title, then its
// id, minutes and what it needs (as `lesson run` starts), wrapped under the title.
int list(const LessonOptions& o) {
  const std::filesystem::path folder = folder_of(o);
  const auto course = lessons::read_course(folder);
  const bool styled = isatty(fileno(stdout)) != 0;
  const std::string indent = "    ";
  int number = 0;
  for (const lessons::CourseFile& file : course) {
    if (!file.lesson) {  // a draft: it keeps its number, and says what is wrong with it
      std::printf("%2d  %s\n", ++number,
                  core::wrap_line(std::string("Not a lesson yet: ") + file.problem->what(), o.width,
                                  4, indent)
                      .c_str());
      continue;
    }
    const lessons::Lesson& l = *file.lesson;
    std::printf("%2d  %s\n", ++number,
                core::bold(core::wrap_line(l.title, o.width, 4, indent), styled).c_str());
    const std::string about =
        l.id + ", " + std::to_string(l.minutes) + " minutes. " +
        (l.coming ? std::string("Coming: not playable yet.") : "Needs: " + l.needs);
    std::printf("%s%s\n", indent.c_str(), core::wrap_line(about, o.width, 4, indent).c_str());
  }
  std::printf("\n");
  for (const std::string& line :
       {std::string("Minutes are class time: the lesson played and talked through with a class."),
        std::string("Play one:       mirrorlab lesson run N     (N: its number or its id)"),
        std::string("On a projector: mirrorlab gui --lesson N --present")}) {
    const bool fits = core::character_count(line) <= static_cast<std::size_t>(o.width);
    std::printf("%s\n", fits ? line.c_str() : core::wrap_line(line, o.width, 0, indent).c_str());
  }
  std::printf("The lesson files are in %s\n", folder.c_str());  // whole, to be copied
  return 0;
}

int check(const LessonOptions& o) {
  try {
    const lessons::Lesson l = lessons::load_lesson(o.file);
    std::size_t checks = 0, questions = 0;
    for (const auto& s : l.steps) checks += s.checks.size(), questions += s.questions.size();
    print_wrapped(
        formatted("%s: lesson \"%s\" (%s): %s, %s, %s: well formed", o.file.c_str(), l.id.c_str(),
                  l.title.c_str(),
                  core::counted(static_cast<std::int64_t>(l.steps.size()), "step").c_str(),
                  core::counted(static_cast<std::int64_t>(questions), "question").c_str(),
                  core::counted(static_cast<std::int64_t>(checks), "check").c_str()),
        "", "  ", o.width);
    return 0;
  } catch (const lessons::LessonError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;  // bad input, as for `lesson run` and every command
  }
}

class Terminal {
 public:
  Terminal(const LessonOptions& o) : o_(o), styled_(isatty(fileno(stdout)) != 0) {}

  bool interactive() const { return !o_.non_interactive && !eof_; }
  std::string bold(const std::string& s) const { return core::bold(s, styled_); }
  void text(const std::vector<lessons::Paragraph>& p) {
    std::fputs(wrap_paragraphs(p, o_.width, styled_).c_str(), stdout);
  }
  // A line typed by the student; "" at the end of input (then nothing more is asked).
  std::string ask(const std::string& prompt) {
    if (!interactive()) return "";
    std::printf("%s", prompt.c_str());
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) {
      eof_ = true;
      std::printf("\n");
    }
    return core::trimmed(line);  // as typed, less the spaces around it (and a Windows \r)
  }

 private:
  const LessonOptions& o_;
  bool styled_;
  bool eof_ = false;
};

// What was wrong with a prediction that is no answer at all: ", which is not a number" ("abc"
// for a number), ", which is none of the choices"; "" for one that is an answer.
std::string unreadable(const lessons::Question& q, const std::string& given) {
  if (q.choices.empty()) return lessons::read_prediction(q, given) ? "" : ", which is not a number";
  const bool a_choice = std::find(q.choices.begin(), q.choices.end(), given) != q.choices.end();
  const bool quoted = lessons::prediction_text(q, given) != given;  // a choice's number
  return a_choice || quoted ? "" : ", which is none of the choices";
}

// Where a question's, an answer's or a check's line goes on when it wraps.
constexpr const char* kHanging = "  ";

int play(const LessonOptions& o) {
  // A lesson saves nothing, and it waits for answers where finishing the step under way would
  // leave Ctrl-C unheard: the first Ctrl-C ends it (status 130).
  stop_at_once_on_interrupt();
  lessons::Lesson lesson = find_lesson(o);
  Terminal term(o);
  std::printf("%s\n%s\n", term.bold(core::wrap_line(lesson.title, o.width, 0, "")).c_str(),
              core::repeat("═", o.width).c_str());
  std::printf("%s\n\n",
              core::wrap_line(std::to_string(lesson.minutes) + " minutes. Needs: " + lesson.needs,
                              o.width, 0, "")
                  .c_str());
  term.text(lesson.introduction);
  if (lesson.coming) {
    std::printf("This lesson is coming: what it needs is not built yet, so it is not played.\n");
    return 0;
  }
  std::printf("%s\n",
              core::wrap_line("Loading Fashion-MNIST from " + o.data_dir + " ...", o.width, 0, "  ")
                  .c_str());
  auto data = std::make_shared<core::FashionMnist>(core::load_fashion_mnist(o.data_dir));
  lessons::PlayerOptions options;
  options.data = data;
  lessons::LessonPlayer player(std::move(lesson), options);
  int failed = 0, passed = 0, right = 0, answered = 0;
  const int steps = static_cast<int>(player.lesson().steps.size());
  for (int i = 0; i < steps; ++i) {
    const lessons::LessonStep& step = player.lesson().steps[static_cast<std::size_t>(i)];
    std::printf("\n%s\n%s\n",
                term.bold(core::wrap_line("Step " + std::to_string(i + 1) + " of " +
                                              std::to_string(steps) + ": " + step.title,
                                          o.width, 0, kHanging))
                    .c_str(),
                core::repeat("─", o.width).c_str());
    term.text(step.text);
    // Predict first: the questions are asked before the run shows the answer.
    std::vector<std::string> given;
    for (const lessons::Question& q : step.questions) {
      std::string choices;
      for (std::size_t c = 0; c < q.choices.size(); ++c) {
        choices += (c ? ", " : " (") + std::to_string(c + 1) + ": " + q.choices[c];
      }
      if (!choices.empty()) choices += ")";
      std::printf("%s %s\n", term.bold("Question:").c_str(),
                  core::wrap_line(q.ask + choices, o.width, 10, kHanging).c_str());
      given.push_back(term.ask("Your answer (Enter to skip): "));
    }
    player.enter(i);
    if (!player.run_actions()) {
      std::printf("The run did not finish this step's actions in time.\n");
      return 1;
    }
    if (!step.look_at.empty()) {
      std::printf("%s\n", core::wrap_line("(In the GUI: look at the " + step.look_at + " panel.)",
                                          o.width, 0, kHanging)
                              .c_str());
    }
    for (const std::string& note : player.notes()) {
      std::printf("The run said: %s\n", core::wrap_line(note, o.width, 14, kHanging).c_str());
    }
    if (!player.run_error().empty()) {
      std::printf("The run stopped: %s\n",
                  core::wrap_line(player.run_error(), o.width, 17, kHanging).c_str());
    }
    for (std::size_t k = 0; k < step.questions.size(); ++k) {
      const lessons::Question& q = step.questions[k];
      const lessons::Answer a = player.answer(q, given[k]);
      if (!given[k].empty()) {  // skipped (Enter) is no answer, right or wrong
        ++answered;
        right += a.correct;
      }
      const std::string verdict = given[k].empty() ? ""
                                  : a.correct
                                      ? "  (you were right)"
                                      : "  (you said " + lessons::prediction_text(q, given[k]) +
                                            unreadable(q, given[k]) + ")";
      std::printf("%s %s\n", term.bold("Answer:").c_str(),
                  core::wrap_line(q.ask + ": " + a.text + verdict, o.width, 8, kHanging).c_str());
      if (!q.explain.empty()) {
        std::printf("%s%s\n", kHanging, core::wrap_line(q.explain, o.width, 2, kHanging).c_str());
      }
    }
    for (const lessons::Check& c : step.checks) {
      const lessons::CheckResult r = player.evaluate(c);
      (r.passed ? passed : failed)++;
      std::printf("%s %s\n", r.passed ? "[pass]" : "[FAIL]",
                  core::wrap_line(c.says + ": " + r.shown, o.width, 7, kHanging).c_str());
    }
    if (i + 1 < steps) term.ask("\nEnter: next step ");
  }
  std::printf("\n%s: %d of %d checks passed", player.lesson().id.c_str(), passed, passed + failed);
  if (answered > 0)
    std::printf("; %d of %s right", right, core::counted(answered, "answer").c_str());
  std::printf(".\n");
  return failed ? 1 : 0;
}

}  // namespace

CLI::App* add_lesson_command(CLI::App& app, LessonOptions& o, LessonCommands& commands) {
  CLI::App* cmd = app.add_subcommand("lesson",
                                     "The course: lessons on mirrored training that "
                                     "run live (list, run, check)");
  cmd->require_subcommand(1);
  o.data_dir = core::kDefaultFashionMnistDir;
  const auto folder_flag = [&o](CLI::App* c) {
    add_text_flag(c, "--lessons", o.folder,
                  "Folder of lesson files (default: mirrorlab's lessons/, or $MIRRORLAB_LESSONS)")
        ->type_name("DIR");
  };
  commands.list = cmd->add_subcommand("list", "The lessons: id, title, minutes, what each needs");
  folder_flag(commands.list);
  commands.run = cmd->add_subcommand(
      "run", "Play a lesson in the terminal: its text, the live run, questions, checks");
  add_text_flag(commands.run, "lesson", o.lesson,
                "A lesson's number or id (see 'lesson list'), or a lesson file")
      ->required()
      ->type_name("N|ID|FILE");
  commands.run->add_flag("--non-interactive", o.non_interactive,
                         "Ask nothing, run every check; exit 1 if one fails");
  add_text_flag(commands.run, "--data", o.data_dir, "Folder with Fashion-MNIST's gzipped IDX files")
      ->type_name("DIR");
  folder_flag(commands.run);
  commands.check = cmd->add_subcommand(
      "check",
      "Check a lesson file without running it: each error with its file and line (exit status "
      "2 for a malformed lesson, as with lesson run)");
  add_text_flag(commands.check, "file", o.file, "A lesson file (.md)")
      ->required()
      ->type_name("FILE");
  return cmd;
}

int run_lesson_command(const LessonOptions& options, const LessonCommands& commands) {
  LessonOptions o = options;
  if (o.width <= 0) o.width = terminal_width();
  try {
    if (*commands.list) return list(o);
    if (*commands.check) return check(o);
    return play(o);
  } catch (const lessons::LessonError& e) {
    std::fprintf(stderr, "mirrorlab lesson: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mirrorlab lesson: %s\n", e.what());
    return 2;
  }
}

}  // namespace mirrorlab::app
