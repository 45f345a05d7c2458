// Plays a lesson on a live TrainingSession: the terminal (`mirrorlab lesson run`) and the GUI's
// Lesson panel each hold one. Entering a step builds its run (when it sets one up) and starts its
// actions; advance(), called in a loop or once per frame, drives them without blocking; once
// they are done, the step's questions are answered and its checks evaluated from live values.
//
// Threads: one viewer thread calls everything; the session trains on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/session/training_session.h"
#include "lessons/player/lesson.h"
#include "lessons/player/live_values.h"

namespace mirrorlab::lessons {

class WeightsReference;

struct CheckResult {
  bool passed = false;
  std::optional<double> value;  // nullopt: the run has not produced it
  std::string shown;            // "gradient_spread_after = 0 (equals 0)"
};

struct Answer {
  std::optional<double> value;  // the live number
  std::string text;             // as shown: the number, or the choice it picks
  bool correct = false;         // of the given answer
};

// An answer as a class reads it: whole numbers in full, others to 3 significant digits (a time
// measured here is not known to 6) and never in exponent form, digits in groups of three, with
// the unit its value's name says ("98.8 µs", "65.3 ms", "1,160 ms", "2,821,752 bytes").
std::string answer_text(std::string_view value, double v);

// A number typed as a prediction for `q`, as a student types it: spaces around it, digits in
// groups of three ("2,821,752") or a decimal comma ("0,5"), a "%" where the answer is a percent.
// Nothing for text that is not one number ("32 examples", "nan").
std::optional<double> read_prediction(const Question& q, std::string given);

// How a session is built for a step's setup: the devices (CPU-backed virtual GPUs unless the
// app chooses CUDA ones) and anything a test wants to change.
struct PlayerOptions {
  std::shared_ptr<const core::FashionMnist> data;  // the whole set; setups take its head
  std::function<void(vgpu::DeviceRegistry&, const std::vector<vgpu::LogicalDeviceConfiguration>&)>
      make_devices;  // empty: CPU-backed virtual GPUs
  // Called with each new session before its first step (tests break things here).
  std::function<void(core::TrainingSession&)> on_new_session;
};

class LessonPlayer {
 public:
  LessonPlayer(Lesson lesson, PlayerOptions options);
  ~LessonPlayer();

  const Lesson& lesson() const { return lesson_; }
  int step_index() const { return step_; }  // -1 before the first
  const LessonStep& step() const { return lesson_.steps.at(static_cast<std::size_t>(step_)); }

  // Enters step `i` (0-based): when it does not set up a run itself, the run is rebuilt from the
  // last step before it that does, and that step's and the following steps' actions are
  // replayed, so going back and forward shows what each step shows.
  void enter(int i);
  // Drives the current step's actions; true when they are all done (or one failed).
  bool advance();
  // Drives only the actions replayed before the step's own (the steps before it, when entered
  // other than from the step before, or the step before's when it was left before they ran):
  // true when they are done, the step's own not begun. What the step's questions ask about.
  bool advance_replay();
  bool replayed() const { return next_action_ >= own_actions_from_; }
  bool actions_done() const { return next_action_ >= actions_.size() && !action_started_; }
  // Drives until done (the terminal and tests). False if `timeout_seconds` passed first.
  bool run_actions(double timeout_seconds = 120);

  // What stopped the run or an action, empty when nothing did ("out of memory on /gpu:1: ...").
  const std::string& run_error() const { return run_error_; }
  // What the run answered to the step's actions, in its own words (a refused reconfiguration).
  const std::vector<std::string>& notes() const { return notes_; }
  core::TrainingSession* session() { return session_.get(); }
  bool has_run() const { return session_ != nullptr; }
  // Counts the runs built (each setup, algorithm or memory switch, going back): a new number,
  // a new run.
  std::uint64_t run_number() const { return runs_built_; }
  // What the current run was built from (also when building it failed: see run_error()).
  const core::SessionConfig& config() const { return config_; }
  const core::SessionSnapshot& snapshot() const { return snapshot_; }

  // A live value now; `devices` for the timing model's values (0: all the machine's GPUs).
  std::optional<double> read(const std::string& value, int replica, int devices = 0) const;
  // The machine the current step's model values speak of (its `topology`, or the last step's
  // before it that names one); null when none is named or it could not be read (see notes()).
  const timing::Topology* machine() const { return machine_.get(); }
  CheckResult evaluate(const Check& check) const;
  // The live answer to `q`; `given` (a number, or a choice's text or 1-based number) is marked.
  Answer answer(const Question& q, const std::string& given = "") const;

 private:
  void build_run(const core::RunSettings& setup);
  void read_machine();  // the current step's machine_, from its `topology` or one before
  void start_action(const Action& a);
  bool action_finished(const Action& a);
  void queue_actions_of(int step);
  bool drive(std::size_t end);  // advance() up to actions_[end]: true once there
  void tell_workers();  // each worker's TF_CONFIG, as notes of the step that sets the run up

  Lesson lesson_;
  PlayerOptions options_;
  int step_ = -1;
  core::RunSettings setup_;  // of the current run
  core::SessionConfig config_;
  std::uint64_t runs_built_ = 0;
  std::unique_ptr<core::TrainingSession> session_;
  std::shared_ptr<WeightsReference> reference_;         // one device
  std::shared_ptr<WeightsReference> worker_reference_;  // one worker of every replica
  core::SessionSnapshot snapshot_;
  std::vector<Action> actions_;
  std::size_t next_action_ = 0;
  bool action_started_ = false;
  std::int64_t target_steps_ = 0;
  std::string last_point_;  // the held point when next_phase() was last asked
  std::string run_error_;
  std::vector<std::string> notes_;
  std::size_t own_actions_from_ = 0;  // actions_ from here are the step's own (before: replayed)
  std::optional<bool> reconfigure_refused_;  // of the last reconfigure_devices in this run
  std::string machine_id_;  // the `topology` in force, and the machine read from it
  std::shared_ptr<const timing::Topology> machine_;
  std::string machine_problem_;
};

}  // namespace mirrorlab::lessons
