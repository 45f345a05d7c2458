#include "lessons/player/player.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/session/text/console_text.h"
#include "core/strategy/plain_trainer.h"
#include "timing/topology_file.h"

namespace mirrorlab::lessons {

// A model trained on the same global batches as the replicas (a step listener on the session's
// strategy): how far replica 0's weights are from its weights after each step.
class WeightsReference : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    train(*start.batch);
    replica0_ = start.replicas.empty() ? nullptr : start.replicas[0];
    return {};
  }
  void end_step(bool completed) override {
    if (!completed || !replica0_) return;
    const std::vector<float> mine = replica0_->model().params_to_host();
    const std::vector<float> theirs = weights();
    double widest = 0;
    for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i) {
      widest = std::max(widest, std::abs(static_cast<double>(mine[i]) - theirs[i]));
    }
    std::lock_guard lock(mutex_);
    distance_ = widest;
  }
  std::optional<double> distance() const {
    std::lock_guard lock(mutex_);
    return distance_;
  }

 protected:
  virtual void train(const core::GlobalBatch& batch) = 0;
  virtual std::vector<float> weights() = 0;

 private:
  core::Replica* replica0_ = nullptr;
  mutable std::mutex mutex_;
  std::optional<double> distance_;
};

// One device (PlainTrainer: no strategy at all).
class OneDeviceReference : public WeightsReference {
 public:
  explicit OneDeviceReference(const core::StrategyOptions& options)
      : arena_("/cpu:reference", std::size_t{512} << 20), trainer_(arena_, options) {}

 protected:
  void train(const core::GlobalBatch& batch) override { trainer_.train_step(batch); }
  std::vector<float> weights() override {
    const auto p = trainer_.model().params();
    return {p.begin(), p.end()};
  }

 private:
  vgpu::MemoryArena arena_;
  core::PlainTrainer trainer_;
};

// One worker of `devices` CPU virtual GPUs: what a run of several workers must equal.
class OneWorkerReference : public WeightsReference {
 public:
  OneWorkerReference(const core::StrategyOptions& options, int devices) {
    registry_.set_logical_device_configuration(devices, 1024);
    strategy_ = std::make_unique<core::MirroredStrategy>(registry_.logical_devices(), options);
  }

 protected:
  void train(const core::GlobalBatch& batch) override { strategy_->train_step(batch); }
  std::vector<float> weights() override { return strategy_->replica(0).model().params_to_host(); }

 private:
  vgpu::DeviceRegistry registry_;
  std::unique_ptr<core::MirroredStrategy> strategy_;
};

namespace {

std::string point_name(const core::PausePoint& p) {
  switch (p.boundary) {
    case core::StepBoundary::kSplit:
      return "after-split";
    case core::StepBoundary::kForward:
      return "after-forward";
    case core::StepBoundary::kBackward:
      return "after-backward";
    case core::StepBoundary::kAllReduceStep:
      return "allreduce-step-" + std::to_string(p.all_reduce_step + 1);
    case core::StepBoundary::kUpdate:
      return "after-update";
  }
  return "";
}

std::string number_text(double v) {
  char buf[64];
  // Whole numbers (bytes, examples, steps) in full; others to 6 significant digits.
  const bool whole = std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15;
  std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.6g", v);
  return core::grouped_digits(buf);  // "1,410,876", as the answers and panels show it
}

// Whether any question or check of the lesson reads `value`.
bool reads(const Lesson& lesson, std::string_view value) {
  for (const LessonStep& s : lesson.steps) {
    for (const Question& q : s.questions) {
      if (q.value == value) return true;
    }
    for (const Check& c : s.checks) {
      if (c.that == value) return true;
    }
  }
  return false;
}

bool compare(double value, Comparison c, double target) {
  switch (c) {
    case Comparison::kEquals:
      return value == target;
    case Comparison::kAtLeast:
      return value >= target;
    case Comparison::kAtMost:
      return value <= target;
    case Comparison::kGreaterThan:
      return value > target;
    case Comparison::kLessThan:
      return value < target;
  }
  return false;
}

}  // namespace

namespace {

// Whether `s` is a number with its whole part's digits in groups of three: "2,821,752",
// "-1,230.5"; not "0,500" (a decimal comma) nor "12,34".
bool grouped_by_three(std::string_view s) {
  std::size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  if (i >= s.size() || s[i] == '0') return false;
  const std::size_t lead = digits();
  if (lead < 1 || lead > 3) return false;
  int groups = 0;
  while (i < s.size() && s[i] == ',') {
    ++i;
    if (digits() != 3) return false;
    ++groups;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits();
  }
  return groups > 0 && i == s.size();
}

}  // namespace

std::optional<double> read_prediction(const Question& q, std::string given) {
  given = core::trimmed(given);
  if (given.ends_with('%') && q.value.find("percent") != std::string::npos) {
    given.pop_back();
    given = core::trimmed(given);
  }
  // Commas: digits in groups of three ("2,821,752"), else one decimal comma ("0,5", "0,500").
  if (grouped_by_three(given)) {
    given.erase(std::remove(given.begin(), given.end(), ','), given.end());
  } else if (std::count(given.begin(), given.end(), ',') == 1 &&
             given.find('.') == std::string::npos) {
    given[given.find(',')] = '.';
  }
  if (given.empty()) return std::nullopt;
  char* end = nullptr;
  const double g = std::strtod(given.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(g)) return std::nullopt;
  return g;
}

std::string answer_text(std::string_view value, double v) {
  char buf[64];
  const bool whole = std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15;
  if (!whole && std::isfinite(v) && std::abs(v) >= 999.5 && std::abs(v) < 1e15) {
    // Three significant digits without an exponent: 1163.4 ms is "1160 ms", not "1.16e+03 ms".
    const double unit = std::pow(10.0, std::floor(std::log10(std::abs(v))) - 2);
    std::snprintf(buf, sizeof buf, "%.0f", std::round(v / unit) * unit);
  } else {
    std::snprintf(buf, sizeof buf, whole ? "%.0f" : "%.3g", v);
  }
  std::string text = core::grouped_digits(buf);  // "2,821,752 bytes", as a class reads it
  const auto ends = [&](std::string_view suffix) { return value.ends_with(suffix); };
  if (ends("_us")) {
    text += " \u00b5s";
  } else if (ends("_ms")) {
    text += " ms";
  } else if (ends("_mib")) {
    text += " MiB";
  } else if (value.find("bytes") != std::string_view::npos) {
    text += " bytes";
  }
  return text;
}

LessonPlayer::LessonPlayer(Lesson lesson, PlayerOptions options)
    : lesson_(std::move(lesson)), options_(std::move(options)) {}

LessonPlayer::~LessonPlayer() {
  // The session first: its training thread may still be in a step that calls the reference.
  session_.reset();
}

void LessonPlayer::build_run(const core::RunSettings& setup) {
  setup_ = setup;
  ++runs_built_;
  run_error_.clear();
  reconfigure_refused_.reset();
  if (session_) session_->stop();
  session_.reset();
  reference_.reset();
  worker_reference_.reset();
  snapshot_ = core::SessionSnapshot{};

  core::SessionConfig config;
  config.settings = setup;
  config.make_devices = options_.make_devices;

  config_ = config;
  auto data = std::make_shared<core::FashionMnist>();
  data->train = options_.data->train.head(setup.train_examples);
  data->test = options_.data->test.head(1000);
  try {
    session_ = std::make_unique<core::TrainingSession>(std::move(data), config);
  } catch (const std::exception& e) {
    run_error_ = e.what();  // an out-of-memory is something a lesson shows
    return;
  }
  // A reference trains a second model every step: only for lessons that look at it.
  core::TrainingSession* session = session_.get();
  if (reads(lesson_, "distance_to_one_device")) {
    reference_ = std::make_shared<OneDeviceReference>(core::strategy_options(setup));
    session_->post([session, r = reference_] { session->strategy().add_listener(r.get()); });
  }
  if (reads(lesson_, "distance_to_one_worker")) {
    try {
      worker_reference_ = std::make_shared<OneWorkerReference>(core::strategy_options(setup),
                                                               setup.devices.gpus * setup.workers);
    } catch (const std::exception& e) {
      notes_.push_back(std::string("no reference of one worker: ") + e.what());
    }
    if (worker_reference_) {
      session_->post(
          [session, r = worker_reference_] { session->strategy().add_listener(r.get()); });
    }
  }
  if (options_.on_new_session) options_.on_new_session(*session_);
  session_->update(snapshot_);
}

void LessonPlayer::queue_actions_of(int i) {
  const LessonStep& s = lesson_.steps[static_cast<std::size_t>(i)];
  actions_.insert(actions_.end(), s.actions.begin(), s.actions.end());
}

void LessonPlayer::enter(int i) {
  if (i < 0 || i >= static_cast<int>(lesson_.steps.size())) return;
  int from = i;
  while (from > 0 && !lesson_.steps[static_cast<std::size_t>(from)].setup) --from;
  // Going on to the next step keeps the run; anything else replays from the setup.
  const bool continues = i == step_ + 1 && !lesson_.steps[static_cast<std::size_t>(i)].setup;
  // A step left before its actions began (Next before "Run the step") leaves them to the next:
  // replayed first, so that the next step starts where it expects.
  std::vector<Action> left_over;
  if (continues && !action_started_ && next_action_ < actions_.size()) {
    left_over.assign(actions_.begin() + static_cast<std::ptrdiff_t>(next_action_), actions_.end());
  }
  actions_ = std::move(left_over);
  notes_.clear();
  next_action_ = 0;
  action_started_ = false;
  if (!continues) {
    if (const auto& setup = lesson_.steps[static_cast<std::size_t>(from)].setup) build_run(*setup);
    for (int k = from; k < i; ++k) queue_actions_of(k);
  }
  own_actions_from_ = actions_.size();  // what the steps replayed said is not this step's
  queue_actions_of(i);
  step_ = i;
  read_machine();
  if (lesson_.steps[static_cast<std::size_t>(i)].setup) tell_workers();
}

void LessonPlayer::tell_workers() {
  const auto& workers = snapshot_.workers;
  for (std::size_t w = 0; w < workers.size(); ++w) {
    std::string devices;
    for (const core::DeviceStatus& d : workers[w].devices) {
      devices += (devices.empty() ? "" : " and ") + d.name;
    }
    notes_.push_back("worker " + std::to_string(w) + " of " + std::to_string(workers.size()) +
                     " (" + devices + "), in TensorFlow's words: TF_CONFIG='" +
                     workers[w].tf_config + "'");
  }
}

void LessonPlayer::read_machine() {
  std::string id;
  for (int k = step_; k >= 0 && id.empty(); --k)
    id = lesson_.steps[static_cast<std::size_t>(k)].topology;
  if (id != machine_id_) {
    machine_id_ = id;
    machine_.reset();
    machine_problem_.clear();
    if (!id.empty()) {
      try {
        machine_ = std::make_shared<const timing::Topology>(timing::find_topology(id));
      } catch (const timing::NotFittedError& e) {
        machine_problem_ = std::string(e.what()) + ": run 'mirrorlab compare --fit' first";
      } catch (const std::exception& e) {
        machine_problem_ = e.what();
      }
    }
  }
  if (!machine_problem_.empty()) notes_.push_back("the timing model: " + machine_problem_);
}

void LessonPlayer::start_action(const Action& a) {
  last_point_.clear();
  switch (a.kind) {
    case ActionKind::kRunSteps:
    case ActionKind::kRunEpochs: {
      const std::int64_t steps =
          a.kind == ActionKind::kRunSteps ? a.count : a.count * snapshot_.steps_per_epoch;
      target_steps_ = snapshot_.steps_done + steps;
      for (std::int64_t k = 0; k < steps; ++k) session_->step();
      break;
    }
    case ActionKind::kPauseAt:
      session_->next_phase();
      last_point_ = "asked";
      break;
    case ActionKind::kFinishStep:
      // Releases a held step to its end; no new step starts (step() would queue one more).
      session_->set_pausing_at_phases(false);
      break;
    case ActionKind::kReconfigureDevices: {
      std::vector<vgpu::LogicalDeviceConfiguration> configs(a.memory_mib.size());
      for (std::size_t i = 0; i < configs.size(); ++i)
        configs[i].memory_limit_mib = a.memory_mib[i];
      const std::string answer = session_->reconfigure_devices(configs);
      reconfigure_refused_ = !answer.empty();
      if (next_action_ >= own_actions_from_) {
        notes_.push_back(answer.empty() ? "the devices took the new configuration" : answer);
      }
      break;
    }
    case ActionKind::kSwitchAllReduce:
    case ActionKind::kSetMemory: {
      core::RunSettings next = setup_;
      if (a.kind == ActionKind::kSwitchAllReduce) next.allreduce = a.allreduce;
      if (a.kind == ActionKind::kSetMemory) {
        next.devices.memory_limits_mib.assign(a.memory_mib.begin(), a.memory_mib.end());
      }
      build_run(next);
      break;
    }
  }
}

bool LessonPlayer::action_finished(const Action& a) {
  const auto& s = snapshot_;
  if (s.state == core::SessionState::kFailed) {
    run_error_ = s.error;
    return true;
  }
  switch (a.kind) {
    case ActionKind::kRunSteps:
    case ActionKind::kRunEpochs:
      return !s.stepping &&
             (s.steps_done >= target_steps_ || s.state != core::SessionState::kPaused);
    case ActionKind::kPauseAt: {
      if (!s.held_at) return false;
      const std::string here = point_name(*s.held_at);
      if (here == a.moment) return true;
      if (here == last_point_) return false;  // still waiting for the last advance
      if (s.held_at->boundary == core::StepBoundary::kUpdate &&
          a.moment.rfind("allreduce-step-", 0) == 0) {
        run_error_ = "pause_at \"" + a.moment + "\": this all-reduce has only " +
                     core::counted(s.step_record.all_reduce_steps, "step");
        return true;
      }
      last_point_ = here;
      session_->next_phase();
      return false;
    }
    case ActionKind::kFinishStep:
      return !s.held_at && !s.stepping;
    case ActionKind::kSwitchAllReduce:
    case ActionKind::kSetMemory:
    case ActionKind::kReconfigureDevices:
      return true;
  }
  return true;
}

bool LessonPlayer::advance() { return drive(actions_.size()); }

bool LessonPlayer::advance_replay() { return drive(own_actions_from_); }

bool LessonPlayer::drive(std::size_t end) {
  if (!session_) {
    // No run (its setup failed): nothing to do until the next setup.
    next_action_ = actions_.size();
    action_started_ = false;
    return true;
  }
  session_->update(snapshot_);
  if (snapshot_.state == core::SessionState::kFailed && run_error_.empty()) {
    run_error_ = snapshot_.error;
  }
  if (action_started_) {
    if (!action_finished(actions_[next_action_])) return false;
    action_started_ = false;
    ++next_action_;
    if (!run_error_.empty()) next_action_ = actions_.size();
  }
  if (next_action_ < std::min(end, actions_.size())) {
    start_action(actions_[next_action_]);
    action_started_ = true;
    if (session_) session_->update(snapshot_);
    return false;
  }
  return next_action_ >= end;
}

bool LessonPlayer::run_actions(double timeout_seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (!advance()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::optional<double> LessonPlayer::read(const std::string& value, int replica, int devices) const {
  const LiveValue* v = find_live_value(value);
  if (!v) return std::nullopt;
  ModelContext model;
  model.topology = machine_;
  model.model = config_.settings.model;
  model.optimizer = config_.settings.optimizer;
  model.batch_per_replica = static_cast<double>(config_.settings.batch_per_replica);
  model.packs = config_.settings.packs;
  LiveRun run;
  run.model = &model;
  run.devices = devices;
  run.run_failed = !run_error_.empty();
  run.snapshot = &snapshot_;
  if (reference_) run.distance_to_one_device = reference_->distance();
  if (worker_reference_) run.distance_to_one_worker = worker_reference_->distance();
  run.reconfigure_refused = reconfigure_refused_;
  run.loss_scaling = config_.settings.loss_scaling;
  return v->read(run, replica);
}

CheckResult LessonPlayer::evaluate(const Check& c) const {
  CheckResult r;
  r.value = read(c.that, c.replica, c.devices);
  r.passed = r.value && std::isfinite(*r.value) && compare(*r.value, c.comparison, c.target);
  r.shown = c.that;
  if (c.replica >= 0) r.shown.append("[").append(std::to_string(c.replica)).append("]");
  if (c.devices > 0) r.shown.append(" on ").append(std::to_string(c.devices)).append(" GPUs");
  r.shown.append(" = ").append(r.value ? number_text(*r.value) : "not measured yet");
  r.shown.append(" (").append(to_string(c.comparison)).append(" ");
  r.shown.append(number_text(c.target)).append(")");
  return r;
}

Answer LessonPlayer::answer(const Question& q, const std::string& given) const {
  Answer a;
  a.value = read(q.value, q.replica, q.devices);
  if (!a.value) {
    a.text = "not measured yet";
    return a;
  }
  if (q.choices.empty()) {
    a.text = answer_text(q.value, *a.value);
    const std::optional<double> g = read_prediction(q, given);
    const double allowed = q.tolerance_relative ? q.tolerance * std::abs(*a.value) : q.tolerance;
    a.correct = g && std::abs(*g - *a.value) <= allowed;
    return a;
  }
  const double index = *a.value;
  const bool in_range =
      index >= 0 && index < static_cast<double>(q.choices.size()) && index == std::floor(index);
  a.text = in_range ? q.choices[static_cast<std::size_t>(index)]
                    : "(live value " + number_text(index) + " is none of the choices)";
  if (in_range && !given.empty()) {  // the choice's text, or its number as prediction_text reads it
    a.correct = given == a.text || prediction_text(q, given) == "\"" + a.text + "\"";
  }
  return a;
}

}  // namespace mirrorlab::lessons
