// A lesson as read from its file in lessons/: a Markdown document (read with md4c) whose steps
// are its `##` sections, each with its prose and one ```toml block (read with toml++) saying
// what the step sets up, does, shows, asks and checks. The format is documented in
// lessons/README.md; this is its data, checked as it is read: anything malformed is refused with
// a LessonError naming the file, the line and what was expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings/run_settings.h"
#include "lessons/player/lesson_text.h"

namespace mirrorlab::lessons {

// A fresh run: what TrainingSession is built with when a step sets one up. A [setup] block's
// keys are the run settings' own (core/settings/run_settings.h: model, optimizer, learning_rate,
// gpus, memory_mib, workers, ...), read by the reader checkpoints use, from these defaults.
core::RunSettings lesson_settings_defaults();

// Something the step does to the run, in order.
enum class ActionKind {
  kRunSteps,         // `run_steps = K`: K whole global steps
  kRunEpochs,        // `run_epochs = K`
  kPauseAt,          // `pause_at = "after-backward"`: step into the next step to that moment
  kFinishStep,       // `finish_step = true`: let a held step run to its end
  kSwitchAllReduce,  // `allreduce = "ring"`: a new run like the current one, other algorithm
  kSetMemory,        // `memory_mib = [1024, 256]`: a new run with these memory limits
  // `reconfigure_devices = [2048, 2048]`: ask the devices in use for another configuration, as
  // calling tf.config.set_logical_device_configuration again does (refused: see notes()).
  kReconfigureDevices,
};
struct Action {
  ActionKind kind = ActionKind::kRunSteps;
  std::int64_t count = 0;               // kRunSteps, kRunEpochs
  std::string moment;                   // kPauseAt: a moment name (see moments())
  std::string allreduce;                // kSwitchAllReduce
  std::vector<std::size_t> memory_mib;  // kSetMemory, kReconfigureDevices
  int line = 0;
};

// The moments a step can pause at, by name: "after-split", "after-forward", "after-backward",
// "allreduce-step-1" (1-based), ..., "after-allreduce", "after-update".
const std::vector<std::string>& moment_names_for_help();

// A question asked before the answer is shown: a number (answered within `tolerance`) or one
// of `choices`. Its answer is a live value, read when the question is asked.
struct Question {
  std::string ask;
  std::string value;                 // the live value that answers it (see observables.h)
  int replica = -1;                  // for values of one replica
  int devices = 0;                   // for model values: this many of the machine's GPUs (0: all)
  std::vector<std::string> choices;  // when set: the answer is choices[value]
  double tolerance = 0;              // how far off an answer may be, in the answer's unit...
  bool tolerance_relative = false;   // ...or, when set, as a fraction of the answer ("20%": 0.2)
  std::string explain;               // shown with the answer
  int line = 0;
};

// A prediction as it was given, to echo it: a choice by its text in quotes (`given` is its
// number, from 1), a number as typed.
std::string prediction_text(const Question& q, const std::string& given);

enum class Comparison { kEquals, kAtLeast, kAtMost, kGreaterThan, kLessThan };
const char* to_string(Comparison c);  // "equals", "at_least", ...

// A check of the live run: `that` compared with `target`.
struct Check {
  std::string that;  // a live value
  int replica = -1;
  int devices = 0;  // for model values: this many of the machine's GPUs (0: all)
  Comparison comparison = Comparison::kEquals;
  double target = 0;
  std::string says;  // what it shows when it holds
  int line = 0;
};

struct LessonStep {
  std::string title;
  int line = 0;  // of its heading
  std::vector<Paragraph> text;
  std::optional<core::RunSettings> setup;
  int setup_line = 0;  // of its [setup]
  std::vector<Action> actions;
  std::string look_at;  // a GUI panel ("Batch split", ...), or empty
  int device = -1;      // `device = "/gpu:1"`: the device it talks about (1), or -1
  // `topology = "dgx-h100"`: the machine its model values (and the GUI's Compare panel) speak
  // of, a preset id or "this-machine"; empty: the one of the step before.
  std::string topology;
  std::vector<Question> questions;
  std::vector<Check> checks;
};

struct Lesson {
  std::string path;  // as given to the reader
  std::string id, title;
  int minutes = 0;
  std::string needs;
  bool coming = false;  // written ahead of what it needs: shown, not played or counted
  std::vector<Paragraph> introduction;
  std::vector<LessonStep> steps;
};

// The GUI panels a step may point at.
const std::vector<std::string>& panel_names();

// Reads a lesson from its text; `path` names it in errors. Throws LessonError.
Lesson parse_lesson(std::string_view markdown, const std::string& path);
// Reads a lesson file. Throws LessonError (also when it cannot be read).
Lesson load_lesson(const std::filesystem::path& file);
// A lesson file of a course's folder: its lesson, or why it is none.
struct CourseFile {
  std::filesystem::path path;
  std::optional<Lesson> lesson;
  std::optional<LessonError> problem;  // when there is no lesson: malformed, or an id taken
};
// Every lesson file (*.md but README.md) in `folder`, in file-name order (their numbers in the
// course), each read or with what is wrong with it: a lecturer's draft that is not a lesson yet
// keeps its number and stops no other lesson. A lesson whose id an earlier file's lesson has is
// no lesson. Throws LessonError when the folder cannot be read.
std::vector<CourseFile> read_course(const std::filesystem::path& folder);
// The same, every file a lesson: throws the first one's problem (a LessonError).
std::vector<Lesson> load_course(const std::filesystem::path& folder);
// The lesson folder: $MIRRORLAB_LESSONS, else the one installed beside the program
// (PREFIX/share/mirrorlab/lessons for PREFIX/bin/mirrorlab), else the source tree's lessons/
// (compiled in).
std::filesystem::path default_lesson_folder();
// A lesson by its number or id in `folder` (empty: default_lesson_folder()), or by a file's path
// (one with a '/' or ending in .md, or a file there that is no lesson's id). Throws LessonError for
// a malformed lesson (that one: others of the folder may be malformed), std::invalid_argument
// (listing the ids there are) for an id that is none of the course's, or a folder given for a file.
Lesson find_lesson(const std::string& id_or_file, const std::filesystem::path& folder = {});
// "" when `lesson` can be played from step `first_step` (1-based), else why not: it is coming,
// or it has no such step (said in terms of --lesson-step).
std::string why_not_playable(const Lesson& lesson, int first_step);

}  // namespace mirrorlab::lessons
