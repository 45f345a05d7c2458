#include "lessons/player/lesson.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/session/text/console_text.h"
#include "core/strategy/mirrored_strategy.h"
#include "files/bounded_file.h"
#include "files/field_words.h"
#include "lessons/player/live_values.h"
#include "lessons/player/markdown_sections.h"
#include "lessons/player/toml_block.h"
#include "nlohmann/json.hpp"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"

#ifndef MIRRORLAB_LESSON_DIR
#define MIRRORLAB_LESSON_DIR "lessons"
#endif

namespace mirrorlab::lessons {

std::string prediction_text(const Question& q, const std::string& given) {
  if (q.choices.empty()) return given;
  char* end = nullptr;
  const long choice = std::strtol(given.c_str(), &end, 10);
  if (given.empty() || *end != '\0' || choice < 1 || choice > static_cast<long>(q.choices.size())) {
    return given;
  }
  return "\"" + q.choices[static_cast<std::size_t>(choice - 1)] + "\"";
}

const char* to_string(Comparison c) {
  switch (c) {
    case Comparison::kEquals:
      return "equals";
    case Comparison::kAtLeast:
      return "at_least";
    case Comparison::kAtMost:
      return "at_most";
    case Comparison::kGreaterThan:
      return "greater_than";
    case Comparison::kLessThan:
      return "less_than";
  }
  return "?";
}

const std::vector<std::string>& panel_names() {
  static const std::vector<std::string> names = {"Controls",  "Devices",    "Batch split",
                                                 "Gradients", "All-reduce", "Training",
                                                 "Timeline",  "Compare",    "Lesson"};
  return names;
}

const std::vector<std::string>& moment_names_for_help() {
  static const std::vector<std::string> names = {"after-split", "after-forward", "after-backward",
                                                 "allreduce-step-N", "after-update"};
  return names;
}

core::RunSettings lesson_settings_defaults() {
  core::RunSettings s;
  s.model = core::ModelKind::kMlp;
  s.batch_per_replica = 32;
  s.train_examples = 2048;  // the first n of Fashion-MNIST's training set
  s.seed = 1;
  s.epochs = 100;  // lessons step; they never run out of epochs
  s.devices.gpus = 2;
  s.workers = 1;
  return s;
}

namespace {

constexpr std::int64_t kMaxMiB = 1 << 20;  // 1 TiB, more than any GPU

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool valid_moment(const std::string& m) {
  const std::string prefix = "allreduce-step-";
  const auto& names = moment_names_for_help();  // all but allreduce-step-N are names as they are
  if (m.rfind(prefix, 0) != 0 && std::find(names.begin(), names.end(), m) != names.end()) {
    return true;
  }
  if (m.rfind(prefix, 0) != 0 || m.size() == prefix.size() || m.size() > prefix.size() + 2) {
    return false;
  }
  const std::string n = m.substr(prefix.size());
  return std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoi(n) >= 1;
}

std::string gpus_text(int gpus) { return std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs"); }

// "" when `limits` memory limits fit `gpus` GPUs (one for all, or one each), else the sentence:
// of a [setup], and of an action that gives its run other limits.
std::string memory_limits_problem(std::size_t limits, int gpus) {
  if (limits <= 1 || limits == static_cast<std::size_t>(gpus)) return "";
  return "`memory_mib` gives " + std::to_string(limits) + " limits for " + gpus_text(gpus) +
         ": give one, or one each";
}

void check_allreduce(const TomlBlock& b, const std::string& name) {
  if (name == vgpu::kAutoAllReduce || vgpu::find_all_reduce(name)) return;
  b.fail(b.line(),
         "unknown all-reduce \"" + name + "\": give auto, " + vgpu::all_reduce_name_list());
}

// A [setup] block: the run settings' keys but the machine's (where the devices are is the
// command line's choice), read as every settings file is, then held to what a lesson plays:
// up to 8 virtual GPUs in all, of one process.
core::RunSettings read_setup(const TomlBlock& b) {
  std::vector<std::string> keys;
  const core::RunSettings defaults = lesson_settings_defaults();
  core::for_each_setting(defaults, [&](const core::SettingInfo& info, const auto&) {
    if (info.role != core::SettingRole::kMachine) keys.emplace_back(info.key);
  });
  b.only(keys, "[setup]");
  // The settings a lesson holds to a range of its own, said as one range whatever was wrong.
  const std::map<std::string, std::pair<std::int64_t, std::int64_t>, std::less<>> ranges = {
      {"gpus", {1, 8}},
      {"workers", {1, 4}},
      {"batch_per_replica", {1, 4096}},
      {"train_examples", {1, 60000}}};
  const auto give = [&ranges](const std::string& key) {
    const auto& [lo, hi] = ranges.at(key);
    return "give a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  };
  core::RunSettings s;
  try {
    s = core::read_settings_json(b.as_json(), defaults);
  } catch (const core::SettingError& e) {
    std::string problem = e.problem();
    if (ranges.count(e.key()) > 0) {  // "is 2.5, not a whole number: give ... from 0 to 64"
      problem = problem.substr(0, problem.find(": give ")) + ": " + give(e.key());
    }
    b.fail(b.line_of_key(e.key()), "`" + e.key() + "`: " + problem);
  }
  for (const auto& [key, value] :
       {std::pair<std::string, std::int64_t>{"gpus", s.devices.gpus},
        {"workers", s.workers},
        {"batch_per_replica", static_cast<std::int64_t>(s.batch_per_replica)},
        {"train_examples", static_cast<std::int64_t>(s.train_examples)}}) {
    const auto& [lo, hi] = ranges.at(key);
    if (value < lo || value > hi) {
      b.fail(b.line_of_key(key), "`" + key + "`: is " + std::to_string(value) +
                                     ", out of range for a lesson: " + give(key));
    }
  }
  if (s.devices.gpus * s.workers > 8) {
    b.fail(b.line(), "`workers` x `gpus` is " + std::to_string(s.devices.gpus * s.workers) +
                         " virtual GPUs: give at most 8 in all");
  }
  const std::string limits =
      memory_limits_problem(s.devices.memory_limits_mib.size(), s.devices.gpus);
  if (!limits.empty()) b.fail(b.line_of_key("memory_mib"), limits);
  return s;
}

Action read_action(const TomlBlock& b) {
  b.only({"run_steps", "run_epochs", "pause_at", "finish_step", "allreduce", "memory_mib",
          "reconfigure_devices"},
         "an action of `do`");
  if (b.table().size() != 1) {
    b.fail(b.line(),
           "an action is one of: { run_steps = K }, { run_epochs = K }, "
           "{ pause_at = \"after-backward\" }, { finish_step = true }, "
           "{ allreduce = NAME }, { memory_mib = [1024, 256] }, "
           "{ reconfigure_devices = [2048, 2048] }");
  }
  Action a;
  a.line = b.line();
  if (auto k = b.integer("run_steps", 1, 100000)) {
    a.kind = ActionKind::kRunSteps;
    a.count = *k;
  } else if (auto e = b.integer("run_epochs", 1, 100)) {
    a.kind = ActionKind::kRunEpochs;
    a.count = *e;
  } else if (auto m = b.text("pause_at")) {
    if (!valid_moment(*m)) {
      b.fail(b.line(), "`pause_at = \"" + *m + "\"`: give one of " +
                           joined(moment_names_for_help()) + " (N from 1)");
    }
    a.kind = ActionKind::kPauseAt;
    a.moment = *m;
  } else if (auto finish = b.boolean("finish_step")) {
    if (!*finish)
      b.fail(b.line(), "`finish_step = false` does nothing: write `{ finish_step = true }`");
    a.kind = ActionKind::kFinishStep;
  } else if (auto name = b.text("allreduce")) {
    check_allreduce(b, *name);
    a.kind = ActionKind::kSwitchAllReduce;
    a.allreduce = *name;
  } else {
    const bool reconfigure = b.table().contains("reconfigure_devices");
    a.kind = reconfigure ? ActionKind::kReconfigureDevices : ActionKind::kSetMemory;
    for (std::int64_t m :
         b.integers(reconfigure ? "reconfigure_devices" : "memory_mib", 1, kMaxMiB)) {
      a.memory_mib.push_back(static_cast<std::size_t>(m));
    }
  }
  return a;
}

// `value`, `replica` and `devices`, shared by questions and checks.
void read_value(const TomlBlock& b, std::string_view key, std::string& value, int& replica,
                int& devices) {
  value = b.required_text(key, "the name of a live value (" + live_value_names() + ")");
  const LiveValue* v = find_live_value(value);
  if (!v)
    b.fail(b.line(), "unknown live value \"" + value + "\": give one of " + live_value_names());
  replica = static_cast<int>(b.integer("replica", 0, 7).value_or(-1));
  if (v->per_replica && replica < 0) {
    b.fail(b.line(), "\"" + value + "\" is a value of one replica: give `replica = N`");
  }
  if (!v->per_replica && replica >= 0) {
    b.fail(b.line(), "\"" + value + "\" is not a value of one replica: leave out `replica`");
  }
  devices = static_cast<int>(b.integer("devices", 1, 4096).value_or(0));
  if (!v->model && devices > 0) {
    b.fail(b.line(), "`devices` goes with the timing model's values (model_...): \"" + value +
                         "\" is the live run's");
  }
}

Question read_question(const TomlBlock& b) {
  b.only({"ask", "answer", "replica", "devices", "choices", "tolerance", "explain"},
         "[[question]]");
  Question q;
  q.line = b.line();
  q.ask = b.required_text("ask", "the question");
  read_value(b, "answer", q.value, q.replica, q.devices);
  q.choices = b.texts("choices");
  if (b.has("choices") && q.choices.size() < 2) b.fail(b.line(), "`choices` needs 2 or more");
  const toml::node* tolerance = b.table().get("tolerance");
  if (tolerance != nullptr && tolerance->is_string()) {
    // A percentage of the answer: a guess at a time measured here is right within a share of
    // it, whatever the machine (a fixed 1000 ms would pass 900 for 65).
    const std::string text = *tolerance->value<std::string>();
    char* end = nullptr;
    const double percent = std::strtod(text.c_str(), &end);
    if (text.empty() || end == nullptr || std::string(end) != "%" || !(percent > 0) ||
        percent > 1000) {
      b.fail(b.line_of(*tolerance),
             "`tolerance = \"" + text +
                 "\"`: give a number in the answer's unit, or a "
                 "percentage of the answer over 0 and up to 1000, e.g. \"25%\"");
    }
    q.tolerance = percent / 100.0;
    q.tolerance_relative = true;
  } else {
    q.tolerance = b.number("tolerance").value_or(0.0);
    if (q.tolerance < 0) b.fail(b.line(), "`tolerance` must be 0 or more");
  }
  q.explain = b.text("explain").value_or("");
  return q;
}

Check read_check(const TomlBlock& b) {
  b.only({"that", "replica", "devices", "equals", "at_least", "at_most", "greater_than",
          "less_than", "says"},
         "[[check]]");
  Check c;
  c.line = b.line();
  read_value(b, "that", c.that, c.replica, c.devices);
  int given = 0;
  for (Comparison cmp : {Comparison::kEquals, Comparison::kAtLeast, Comparison::kAtMost,
                         Comparison::kGreaterThan, Comparison::kLessThan}) {
    if (auto t = b.number(to_string(cmp))) {
      c.comparison = cmp;
      c.target = *t;
      ++given;
    }
  }
  if (given != 1) {
    b.fail(b.line(),
           "a check compares with one of: equals, at_least, at_most, greater_than, "
           "less_than (a number)");
  }
  c.says = b.required_text("says", "what the check shows when it holds");
  return c;
}

void read_step_block(const TomlBlock& b, LessonStep& step) {
  b.only({"setup", "do", "look_at", "device", "topology", "question", "check"}, "a step's block");
  if (auto setup = b.sub_table("setup")) {
    step.setup = read_setup(*setup);
    step.setup_line = setup->line();
  }
  for (const TomlBlock& a : b.tables("do")) step.actions.push_back(read_action(a));
  step.look_at = b.text("look_at").value_or("");
  const auto& panels = panel_names();
  if (!step.look_at.empty() &&
      std::find(panels.begin(), panels.end(), step.look_at) == panels.end()) {
    b.fail(b.line(), "`look_at = \"" + step.look_at + "\"`" +
                         files::field_words::did_you_mean(step.look_at, panels) +
                         ": give a panel: " + joined(panels));
  }
  if (const auto device = b.text("device")) {
    // "/gpu:N", N a replica's index: what the GUI highlights.
    const std::string prefix = "/gpu:";
    const std::string digits = device->rfind(prefix, 0) == 0 ? device->substr(prefix.size()) : "";
    if (digits.size() != 1 || digits[0] < '0' || digits[0] > '7') {
      b.fail(b.line(), "`device = \"" + *device + "\"`: give a device as \"/gpu:0\" to \"/gpu:7\"");
    }
    step.device = digits[0] - '0';
  }
  if (const auto topology = b.text("topology")) {
    // A preset, or this machine's fit (which a lesson can name before it is made: the step then
    // says it is missing when played).
    if (*topology != timing::kFittedTopologyId) {
      try {
        timing::find_topology(*topology);
      } catch (const std::exception& e) {
        b.fail(b.line(), "`topology = \"" + *topology + "\"`: " + e.what());
      }
    }
    step.topology = *topology;
  }
  for (const TomlBlock& q : b.tables("question")) step.questions.push_back(read_question(q));
  for (const TomlBlock& c : b.tables("check")) step.checks.push_back(read_check(c));
}

// The timing model's values price a machine: a step that reads one needs a `topology` of its
// own or of a step before it.
void require_machines(const Lesson& lesson) {
  bool named = false;
  for (const LessonStep& step : lesson.steps) {
    named = named || !step.topology.empty();
    const auto refuse = [&](const std::string& value, int line) {
      const LiveValue* v = find_live_value(value);
      if (v && v->model && !named) {
        throw LessonError(lesson.path, line,
                          "\"" + value +
                              "\" reads the timing model: give the machine first, as "
                              "`topology = \"dgx-h100\"` in this step or one before");
      }
    };
    for (const Question& q : step.questions) refuse(q.value, q.line);
    for (const Check& c : step.checks) refuse(c.that, c.line);
  }
}

// What a step's actions, questions and checks ask of the run they play on. A step's run is its
// own [setup], else the run of the step before as that step's actions left it (another
// all-reduce, other memory limits): a moment its all-reduce has, a memory limit for each of its
// GPUs (or one for all), a replica it has.

constexpr std::string_view kAllReduceStep = "allreduce-step-";

// "2 GPUs", "2 workers x 2 GPUs".
std::string run_text(const core::RunSettings& s) {
  const std::string gpus = gpus_text(s.devices.gpus);
  return s.workers > 1 ? std::to_string(s.workers) + " workers x " + gpus : gpus;
}

// The algorithm a run of `s` takes on CPU-backed virtual GPUs, where lessons play ("auto": the
// ring).
std::string algorithm_of(const core::RunSettings& s) {
  return s.allreduce == vgpu::kAutoAllReduce ? std::string(vgpu::kRingName) : s.allreduce;
}

// The steps of its all-reduce: the algorithm's on a worker's GPUs, and with several workers one
// across them and one back to every device (vgpu::HierarchicalAllReduce). NCCL's all-reduce is
// one step (a library call), where it can run at all: not on virtual GPUs, where the run says why.
int allreduce_steps(const core::RunSettings& s) {
  const std::string name = algorithm_of(s);
  const int within =
      name == vgpu::kNcclName ? 1 : vgpu::make_all_reduce(name)->num_steps(s.devices.gpus);
  return within + (s.workers > 1 ? 2 : 0);
}

void require_moment(const Lesson& lesson, const Action& a, const core::RunSettings& run) {
  if (a.moment.rfind(kAllReduceStep, 0) != 0) return;
  const int n = std::stoi(a.moment.substr(kAllReduceStep.size()));  // 1 to 99 (read so)
  const int steps = allreduce_steps(run);
  if (n <= steps) return;
  std::string takes = "the run's " + algorithm_of(run) + " all-reduce on " + run_text(run);
  if (steps == 0) {
    takes += " takes no steps (one replica has no other to sum with): pause at another moment";
  } else {
    takes += " takes " + std::to_string(steps) + (steps == 1 ? " step" : " steps") +
             (run.workers > 1 ? " (those within a worker, then one across the workers and one "
                                "back to every device)"
                              : "") +
             ": give allreduce-step-1" +
             (steps > 1 ? " to allreduce-step-" + std::to_string(steps) : "");
  }
  throw LessonError(lesson.path, a.line, "`pause_at = \"" + a.moment + "\"`: " + takes);
}

// A value of one replica reads worker 0's: replicas 0 to gpus - 1.
void require_replica(const Lesson& lesson, int replica, int line, const core::RunSettings& run) {
  if (replica < run.devices.gpus) return;
  throw LessonError(lesson.path, line,
                    "`replica = " + std::to_string(replica) + "`: the run has replicas 0 to " +
                        std::to_string(run.devices.gpus - 1) + " (" +
                        (run.workers > 1 ? "worker 0's " : "one on each of its ") +
                        gpus_text(run.devices.gpus) + ")");
}

void require_followable(const Lesson& lesson) {
  std::optional<core::RunSettings> run;
  for (const LessonStep& step : lesson.steps) {
    if (step.setup) run = step.setup;
    if (!run) continue;  // a coming lesson's steps before its first [setup]: nothing is played
    for (const Action& a : step.actions) {
      if (a.kind == ActionKind::kPauseAt) require_moment(lesson, a, *run);
      if (a.kind == ActionKind::kSwitchAllReduce) run->allreduce = a.allreduce;
      if (a.kind == ActionKind::kSetMemory) {
        // As a [setup]'s: the player gives the limits to a run like the current one.
        const std::string problem = memory_limits_problem(a.memory_mib.size(), run->devices.gpus);
        if (!problem.empty()) throw LessonError(lesson.path, a.line, problem);
        run->devices.memory_limits_mib.assign(a.memory_mib.begin(), a.memory_mib.end());
      }
    }
    for (const Question& q : step.questions) require_replica(lesson, q.replica, q.line, *run);
    for (const Check& c : step.checks) require_replica(lesson, c.replica, c.line, *run);
  }
}

void read_metadata(const TomlBlock& b, Lesson& lesson) {
  b.only({"id", "minutes", "needs", "coming"}, "the lesson's block");
  lesson.id = b.required_text("id", "the lesson's short name (as `mirrorlab lesson run ID`)");
  if (!std::all_of(lesson.id.begin(), lesson.id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      })) {
    b.fail(b.line(), "`id = \"" + lesson.id + "\"`: use lowercase letters, digits and -");
  }
  lesson.minutes = static_cast<int>(b.integer("minutes", 1, 120).value_or(0));
  if (lesson.minutes == 0) b.fail(b.line(), "needs `minutes`, how long it takes in class");
  lesson.needs = b.text("needs").value_or("");
  lesson.coming = b.boolean("coming").value_or(false);
}

// A backtick left in the prose is a code span Markdown did not close: most often one that runs
// over a line starting with "* ", "- ", "+ " or "1. ", which Markdown reads as a list item
// (lesson 8 had `BATCH_SIZE_PER_REPLICA` and `* num_replicas_in_sync` so, drawn as a bullet).
void require_closed_code_spans(const std::vector<Section>& sections, const std::string& path) {
  for (const Section& s : sections) {
    for (const Paragraph& p : s.text) {
      if (p.kind == ParagraphKind::kCodeBlock) continue;
      for (const TextRun& run : p.runs) {
        if (run.style == RunStyle::kCode || run.text.find('`') == std::string::npos) continue;
        throw LessonError(path, s.line,
                          "a ` left open in the text under \"" + s.title +
                              "\": a code span must close on its line when the next line starts "
                              "with '* ', '- ', '+ ' or a number and '. ' (Markdown reads that "
                              "line as a list item); reflow the paragraph");
      }
    }
  }
}

}  // namespace

Lesson parse_lesson(std::string_view markdown, const std::string& path) {
  // A UTF-8 byte-order mark, which some editors write first, is no part of the `# Title` line.
  if (markdown.starts_with("\xEF\xBB\xBF")) markdown.remove_prefix(3);
  std::vector<Section> sections = read_sections(markdown, path);
  Lesson lesson;
  lesson.path = path;
  auto title =
      std::find_if(sections.begin(), sections.end(), [](const Section& s) { return s.level == 1; });
  if (title == sections.end())
    throw LessonError(path, 0, "no `# Title` line: a lesson starts with one");
  for (const Section& s : sections) {
    if (s.level == 0 && !s.toml.empty()) {
      throw LessonError(path, s.toml[0].line, "a ```toml block before the `# Title` line");
    }
  }
  require_closed_code_spans(sections, path);
  lesson.title = title->title;
  lesson.introduction = title->text;
  if (title->toml.size() != 1) {
    throw LessonError(path, title->toml.empty() ? title->line : title->toml[1].line,
                      "under the title, one ```toml block with id and minutes");
  }
  read_metadata(TomlBlock(title->toml[0].body, path, title->toml[0].line), lesson);
  for (auto s = title + 1; s != sections.end(); ++s) {
    if (s->level == 1) throw LessonError(path, s->line, "a second `# Title`: steps are `## ...`");
    LessonStep step;
    step.title = s->title;
    step.line = s->line;
    step.text = s->text;
    if (s->toml.size() > 1) {
      throw LessonError(path, s->toml[1].line, "one ```toml block per step (`## ...`)");
    }
    if (!s->toml.empty()) read_step_block(TomlBlock(s->toml[0].body, path, s->toml[0].line), step);
    lesson.steps.push_back(std::move(step));
  }
  if (lesson.steps.empty()) throw LessonError(path, 0, "no steps: each `## ...` section is one");
  require_machines(lesson);
  require_followable(lesson);
  if (!lesson.coming && !lesson.steps[0].setup) {
    throw LessonError(path, lesson.steps[0].line,
                      "the first step needs a [setup]: the run it plays");
  }
  return lesson;
}

Lesson load_lesson(const std::filesystem::path& file) {
  try {
    return parse_lesson(
        files::read_bounded_file(file, 1 << 20, "a lesson is a few KiB of Markdown"),
        file.string());
  } catch (const files::InputFileError& e) {
    throw LessonError(file.string(), 0, e.problem());
  }
}

std::vector<CourseFile> read_course(const std::filesystem::path& folder) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const auto& p = entry.path();
    if (p.extension() == ".md" && p.filename() != "README.md") files.push_back(p);
  }
  if (ec) {
    throw LessonError(folder.string(), 0,
                      "no lesson folder there (" + ec.message() +
                          "). Name one with --lessons DIR or $MIRRORLAB_LESSONS; an installed "
                          "mirrorlab ('cmake --install build --prefix DIR') reads "
                          "DIR/share/mirrorlab/lessons");
  }
  std::sort(files.begin(), files.end());
  std::vector<CourseFile> course;
  std::map<std::string, std::string> ids;
  for (const auto& f : files) {
    CourseFile& file = course.emplace_back();
    file.path = f;
    try {
      Lesson lesson = load_lesson(f);
      const auto [at, fresh] = ids.emplace(lesson.id, f.string());
      if (!fresh)
        throw LessonError(f.string(), 0, "id \"" + lesson.id + "\" is " + at->second + "'s too");
      file.lesson = std::move(lesson);
    } catch (const LessonError& e) {
      file.problem = e;
    }
  }
  return course;
}

std::vector<Lesson> load_course(const std::filesystem::path& folder) {
  std::vector<Lesson> lessons;
  for (CourseFile& file : read_course(folder)) {
    if (file.problem) throw *file.problem;
    lessons.push_back(std::move(*file.lesson));
  }
  return lessons;
}

std::filesystem::path default_lesson_folder() {
  if (const char* env = std::getenv("MIRRORLAB_LESSONS"); env && *env) return env;
  // Installed: PREFIX/bin/mirrorlab beside PREFIX/share/mirrorlab/lessons.
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed =
        program.parent_path().parent_path() / MIRRORLAB_INSTALLED_LESSONS;
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
  return MIRRORLAB_LESSON_DIR;
}

std::string why_not_playable(const Lesson& lesson, int first_step) {
  std::string why = "lesson \"";
  why.append(lesson.id).append("\" ");
  if (lesson.coming) {
    return why
        .append(
            "is coming: what it needs is not built yet, so it cannot be played "
            "('mirrorlab lesson run ")
        .append(lesson.id)
        .append("' shows its text)");
  }
  const int steps = static_cast<int>(lesson.steps.size());
  if (first_step >= 1 && first_step <= steps) return "";
  return "--lesson-step " + std::to_string(first_step) + ": " +
         why.append("has steps 1 to ").append(std::to_string(steps));
}

Lesson find_lesson(const std::string& id_or_file, const std::filesystem::path& folder) {
  std::error_code ec;
  if (std::filesystem::is_directory(id_or_file, ec)) {
    throw std::invalid_argument(id_or_file +
                                " is a folder: give a lesson file in it, or name the folder with "
                                "--lessons and a lesson by its number or id");
  }
  if (id_or_file.find('/') != std::string::npos || id_or_file.ends_with(".md")) {
    return load_lesson(id_or_file);
  }
  std::vector<CourseFile> course = read_course(folder.empty() ? default_lesson_folder() : folder);
  // A number is the lesson's place in the course ('lesson list' numbers them): 1, or 01.
  if (!id_or_file.empty() && id_or_file.size() <= 3 &&
      std::all_of(id_or_file.begin(), id_or_file.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    const std::size_t number = std::stoul(id_or_file);
    if (number >= 1 && number <= course.size()) {
      CourseFile& file = course[number - 1];
      if (file.problem) throw *file.problem;
      return std::move(*file.lesson);
    }
    throw std::invalid_argument("no lesson " + id_or_file + ": the lessons are numbered 1 to " +
                                std::to_string(course.size()) +
                                " ('mirrorlab lesson list' shows them)");
  }
  std::string ids;
  std::vector<std::string> names;
  std::size_t broken = 0;
  for (CourseFile& file : course) {
    if (!file.lesson) {
      ++broken;
      continue;
    }
    if (file.lesson->id == id_or_file) return std::move(*file.lesson);
    if (!ids.empty()) ids.append(", ");
    ids.append(file.lesson->id);
    names.push_back(file.lesson->id);
  }
  // A file of that name here ("my-lesson.txt"), when no lesson of the course has it.
  if (std::filesystem::is_regular_file(id_or_file, ec)) return load_lesson(id_or_file);
  std::string what = "no lesson \"";
  what.append(id_or_file).append("\"").append(files::field_words::did_you_mean(id_or_file, names));
  what.append(": the lessons are ").append(ids).append(" ('mirrorlab lesson list' shows them");
  if (broken > 0) {
    what.append(", and ").append(core::counted(static_cast<std::int64_t>(broken), "file"));
    what.append(broken == 1 ? " that is" : " that are").append(" no lesson yet");
  }
  what.append("), or give a lesson file's path");
  throw std::invalid_argument(what);
}

}  // namespace mirrorlab::lessons
