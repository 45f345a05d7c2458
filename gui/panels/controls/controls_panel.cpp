#include "gui/panels/controls/controls_panel.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "gui/drawing/colors.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/model/advice.h"
#include "gui/panels/lesson_asks.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"
#include "virtualgpu/collectives/all_reduce_choice.h"

namespace mirrorlab::gui {
namespace {

// The all-reduce choices: TensorFlow's own, then every algorithm of the table.
const std::vector<std::string>& algorithm_choices() { return core::allreduce_choices(); }

bool algorithm_choice_text(void*, int index, const char** text) {
  *text = algorithm_choices()[static_cast<std::size_t>(index)].c_str();
  return true;
}

bool model_choice_text(void*, int index, const char** text) {
  *text = core::choices_of<core::ModelKind>()[static_cast<std::size_t>(index)].name;
  return true;
}

// Where `value` is in its table of names.
template <class E>
int choice_index(E value) {
  const auto names = core::choices_of<E>();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i].value == value) return static_cast<int>(i);
  }
  return 0;
}

// `not_started`: no run could be made of the settings (the sentence why follows the badge).
void state_badge(const core::SessionSnapshot& run, double t, bool not_started) {
  std::uint32_t color = rgb(0xBBBBBB);
  switch (run.state) {
    case core::SessionState::kRunning:
      color = rgb(0x009E73);
      break;
    case core::SessionState::kPaused:
      color = rgb(0xE69F00);
      break;
    case core::SessionState::kFinished:
      color = rgb(0x56B4E9);
      break;
    case core::SessionState::kFailed:
      color = rgb(0xD55E00);
      break;
    case core::SessionState::kStopped:
      break;
  }
  if (not_started) color = rgb(0xBBBBBB);
  // A dot that blinks while training runs, so a frozen picture is never mistaken for a live one.
  const float r = ImGui::GetTextLineHeight() * 0.35f;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 centre(p.x + r, p.y + ImGui::GetTextLineHeight() / 2);
  const bool pulse = run.state == core::SessionState::kRunning && std::fmod(t, 1.0) < 0.5;
  if (pulse) {
    ImGui::GetWindowDrawList()->AddCircle(centre, r, color, 0, 2.0f);
  } else {
    ImGui::GetWindowDrawList()->AddCircleFilled(centre, r, color);
  }
  ImGui::Dummy(ImVec2(2 * r, 2 * r));
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_Text, color);
  const std::string held =
      run.held_at ? "held inside step " + std::to_string(run.held_at->step + 1) : "";
  // A watched run: its driver trains it, between its fits it waits for that driver.
  const std::string watched =
      run.driven_by.empty()                       ? ""
      : run.state == core::SessionState::kRunning ? "training (" + run.driven_by + ")"
      : run.state == core::SessionState::kPaused  ? "waiting for " + run.driven_by
                                                  : "";
  ImGui::TextUnformatted(not_started          ? "not started"
                         : run.busy_with_task ? "measuring"
                         : run.held_at        ? held.c_str()
                         : !watched.empty()   ? watched.c_str()
                                              : core::to_string(run.state));
  ImGui::PopStyleColor();
}

}  // namespace

void watch_forward(FrameContext& frame, bool run_may_move) {
  const int moments = static_cast<int>(frame.run.step_record.points.size());
  int& watched = frame.view.watched_moment;
  if (watched >= 0 && watched + 1 < moments) {
    ++watched;
    if (watched == moments - 1) watched = -1;  // caught up with the run: live again
    return;
  }
  watched = -1;
  if (frame.session != nullptr && run_may_move) frame.session->next_phase();
}

void watch_back(FrameContext& frame) {
  const int moments = static_cast<int>(frame.run.step_record.points.size());
  int& watched = frame.view.watched_moment;
  if (moments < 2) return;
  watched = watched < 0 ? moments - 2 : std::max(0, watched - 1);
}

void ControlsPanel::load(const core::SessionConfig& config) {
  const std::vector<vgpu::LogicalDeviceConfiguration> devices = core::session_devices(config);
  gpus_ = static_cast<int>(devices.size());
  memory_mib_.clear();
  for (const auto& d : devices) memory_mib_.push_back(static_cast<int>(d.memory_limit_mib));
  model_ = choice_index(config.settings.model);
  const auto& choices = algorithm_choices();
  const auto chosen = std::find(choices.begin(), choices.end(), config.settings.allreduce);
  algorithm_ = chosen == choices.end() ? 0 : static_cast<int>(chosen - choices.begin());
  batch_ = static_cast<int>(config.settings.batch_per_replica);
  learning_rate_ = config.settings.optimizer.learning_rate;
  pack_kib_ = static_cast<int>((config.settings.packs.bytes_per_pack + 1023) / 1024);
  loaded_pack_kib_ = pack_kib_;
  overlap_ = config.settings.packs.overlap;
  load_faults(config.faults);
  loaded_ = true;
}

void ControlsPanel::Draw(FrameContext& frame) {
  // A run built elsewhere (a lesson's step) shows its own settings.
  if (!loaded_ || frame.run_id != loaded_for_) {
    load(frame.config);
    loaded_for_ = frame.run_id;
  }
  draw_run_state(frame);
  ImGui::Separator();
  if (!frame.run.driven_by.empty()) {
    draw_within_step(frame);
    ImGui::Separator();
    draw_watched_settings(frame);
    frame.report.drew(name(), "buttons", 0);
    return;
  }
  // While a lesson's step waits for predictions, its run's settings are what the class reads
  // (the step's phases come once it runs): they come first.
  if (frame.view.lesson_asks) {
    draw_settings(frame);
    ImGui::Separator();
    draw_within_step(frame);
  } else {
    draw_within_step(frame);
    ImGui::Separator();
    draw_settings(frame);
  }
  ImGui::Separator();
  draw_faults(frame);
  ImGui::Separator();
  draw_checkpoint(frame);
  // run/pause, one step, apply; apply faults; save, load
  frame.report.drew(name(), "buttons", 6);
}

void ControlsPanel::draw_run_state(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  core::TrainingSession* session = frame.session;
  state_badge(run, frame.seconds_since_start, session == nullptr && !frame.setup_error.empty());
  // A run that cannot start says why first, where the panel's top is always in view; a lesson
  // asks about that sentence, so while its step waits for predictions the sentence waits too.
  if (!frame.setup_error.empty() && frame.view.lesson_asks) {
    text_wrapped_dim(
        "Whether this run can start shows here when the step runs: predict first, then \"Run "
        "the step and show me\".");
  } else if (!frame.setup_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
    text_wrapped("Cannot start this run: %s", frame.setup_error.c_str());
    ImGui::PopStyleColor();
  }
  if (session != nullptr) {
    // Steps done, not the step in progress: "held inside step 1" reads above "0 steps done".
    if (run.epochs == 0) {  // a watched run no fit has trained yet (a custom loop's)
      text_wrapped("%lld step%s done", static_cast<long long>(run.steps_done),
                   run.steps_done == 1 ? "" : "s");
    } else {
      text_wrapped(
          "%lld step%s done  (epoch %d/%d, %lld/%s)", static_cast<long long>(run.steps_done),
          run.steps_done == 1 ? "" : "s", std::max(run.epoch, 1), run.epochs,
          static_cast<long long>(run.step_in_epoch),
          blank_if_asked(frame, "steps_per_epoch", std::to_string(run.steps_per_epoch)).c_str());
    }
    const std::string global_batch =
        blank_if_asked(frame, "global_batch", std::to_string(run.global_batch));
    if (run.workers.size() > 1) {
      text_wrapped("Global batch %s = %zu x %zu devices x %zu workers", global_batch.c_str(),
                   run.batch_per_replica(), run.devices.size(), run.workers.size());
    } else {
      // Every worker's replicas (a watched multi-worker run lists no workers).
      const std::string replicas =
          blank_if_asked(frame, "replicas", std::to_string(run.replicas_in_sync));
      text_wrapped("Global batch %s = %zu x %s replica%s", global_batch.c_str(),
                   run.batch_per_replica(), replicas.c_str(), plural_s(replicas));
    }
  }
  if (!run.driven_by.empty()) {  // no buttons: the run is its driver's
    text_wrapped_dim(
        "Trained from %s (model.fit, or a custom loop): this window only watches. "
        "Closing it leaves the run as it is.",
        run.driven_by.c_str());
    if (!run.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
      text_wrapped("%s", run.error.c_str());
      ImGui::PopStyleColor();
    }
    return;
  }
  const bool live = session != nullptr && (run.state == core::SessionState::kPaused ||
                                           run.state == core::SessionState::kRunning);
  // While a lesson's step waits for predictions its run stays where the steps before left it,
  // as the keys leave it (AppWindow::handle_keys): the step runs by "Run the step and show me".
  ImGui::BeginDisabled(!live || frame.view.lesson_asks);
  const float w = ImGui::GetContentRegionAvail().x;
  const ImVec2 button((w - ImGui::GetStyle().ItemSpacing.x) / 2, 0);
  if (run.state == core::SessionState::kRunning) {
    if (ImGui::Button("Pause", button)) session->pause();
  } else if (ImGui::Button("Run", button)) {
    session->run();
  }
  ImGui::SameLine();
  if (ImGui::Button("One step", button)) session->step();
  ImGui::EndDisabled();
  if (!run.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
    text_wrapped("%s", run.error.c_str());
    ImGui::PopStyleColor();
    text_wrapped("%s", advice(run.failure, frame.config).c_str());
  }
}

void ControlsPanel::draw_within_step(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  const core::RecordedStep& record = run.step_record;
  ImGui::TextUnformatted("Inside a step");
  bool pausing = run.pausing_at_phases;
  const bool watched = !run.driven_by.empty();  // its steps are recorded, never held
  ImGui::BeginDisabled(frame.session == nullptr);
  // The box's label whole, shorter where the column is narrow.
  const float label_room = ImGui::GetContentRegionAvail().x - ImGui::GetFrameHeight() -
                           ImGui::GetStyle().ItemInnerSpacing.x;
  const std::string pause_label =
      first_that_fits({"pause at every phase", "pause at phases", "pause"}, label_room) +
      "###pause at every phase";
  if (!watched && ImGui::Checkbox(pause_label.c_str(), &pausing)) {
    frame.session->set_pausing_at_phases(pausing);
  }
  const float w = ImGui::GetContentRegionAvail().x;
  const ImVec2 button((w - ImGui::GetStyle().ItemSpacing.x) / 2, 0);
  ImGui::BeginDisabled(record.points.size() < 2);
  if (ImGui::Button("< Back", button)) watch_back(frame);
  ImGui::EndDisabled();
  ImGui::SameLine();
  const float padding = 2 * ImGui::GetStyle().FramePadding.x;
  const std::string forward =
      frame.view.watched_moment >= 0
          ? first_that_fits({"Forward >", ">"}, button.x - padding)
          : first_that_fits({"Next phase >", "Phase >", ">"}, button.x - padding);
  // Watched, the live moment is the run's own: only what was recorded can be walked.
  ImGui::BeginDisabled((watched || frame.view.lesson_asks) && frame.view.watched_moment < 0);
  if (ImGui::Button(forward.c_str(), button)) watch_forward(frame, !frame.view.lesson_asks);
  ImGui::EndDisabled();
  ImGui::EndDisabled();
  // The moments of this step so far; the one shown is highlighted, a click shows another.
  const int moments = static_cast<int>(record.points.size());
  const int shown = frame.view.watched_moment >= 0 ? frame.view.watched_moment : moments - 1;
  if (moments == 0 && watched) {
    text_wrapped_dim("Each step's phases show here once %s has run one.", run.driven_by.c_str());
  } else if (moments == 0 && frame.view.lesson_asks) {
    text_wrapped_dim("The step's phases show here once it runs.");
  } else if (moments == 0) {
    text_wrapped_dim("Next phase (Right arrow) starts a step that stops after each phase.");
  } else {
    ImGui::Text("Step %lld so far:", static_cast<long long>(record.step + 1));
  }
  for (int i = 0; i < moments; ++i) {
    const core::PausePoint& p = record.points[static_cast<std::size_t>(i)];
    // "all-reduce step 1 of 2 (reduce-scatter) (now)", shorter where the column is narrow.
    std::string label = p.label();
    label.erase(0, label.find(": ") + 2);
    const std::string now = i == moments - 1 && run.held_at ? " (now)" : "";
    const std::string plain = label.substr(0, label.find(" ("));
    label = first_that_fits({label + now, plain + now, plain},
                            ImGui::GetContentRegionAvail().x - padding);
    ImGui::PushID(i);
    if (ImGui::Selectable(label.c_str(), i == shown)) {
      frame.view.watched_moment = i == moments - 1 ? -1 : i;
    }
    ImGui::PopID();
  }
  if (frame.view.watched_moment >= 0) {
    text_wrapped_dim("re-watching: Right goes forward, Left back");
  }
  frame.report.drew(name(), "moments", moments);
}

void ControlsPanel::draw_watched_settings(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  const core::RunSettings& settings = frame.config.settings;
  text_wrapped("Settings (%s's)", run.driven_by.c_str());
  std::string names;
  for (const core::DeviceStatus& d : run.devices) names += (names.empty() ? "" : ", ") + d.name;
  text_wrapped("%zu replica%s: %s", run.devices.size(), run.devices.size() == 1 ? "" : "s",
               names.c_str());
  if (!run.step_record.all_reduce.empty()) {
    text_wrapped("All-reduce: %s", run.step_record.all_reduce.c_str());
  }
  text_wrapped("Optimizer: %s, learning rate %g", core::to_string(settings.optimizer.kind),
               static_cast<double>(run.learning_rate));  // Python may have set another
  text_wrapped_dim("Changed in %s: a model compiled again is a new run (watch it again).",
                   run.driven_by.c_str());
}

void ControlsPanel::draw_settings(FrameContext& frame) {
  text_wrapped("Settings (Apply restarts the run)");
  ImGui::PushItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
  // Up to 16 by dragging (or more when the run was started with more, up to --gpus' 64).
  const int most = std::max(16, static_cast<int>(core::session_devices(frame.config).size()));
  if (ImGui::SliderInt("virtual GPUs", &gpus_, 1, most, "%d", ImGuiSliderFlags_AlwaysClamp)) {
    memory_mib_.resize(static_cast<std::size_t>(gpus_),
                       memory_mib_.empty() ? 1024 : memory_mib_.back());
  }
  ImGui::Combo("model", &model_, model_choice_text, nullptr,
               static_cast<int>(core::choices_of<core::ModelKind>().size()));
  ImGui::Combo("all-reduce", &algorithm_, algorithm_choice_text, nullptr,
               static_cast<int>(algorithm_choices().size()));
  ImGui::InputInt("batch/replica", &batch_, 8, 64);
  batch_ = std::clamp(batch_, 1, 1 << 16);
  ImGui::SliderFloat("learning rate", &learning_rate_, 1e-5f, 1.0f, "%.5f",
                     ImGuiSliderFlags_Logarithmic);
  // Gradient packs (TensorFlow's bytes_per_pack, DDP's bucket): 0 is one buffer.
  ImGui::InputInt("KiB a pack", &pack_kib_, 4, 64);
  pack_kib_ = std::clamp(pack_kib_, 0, 1 << 20);
  if (frame.config.settings.packs.num_packs > 0 && pack_kib_ == loaded_pack_kib_) {
    text_wrapped_dim("%d packs (num_packs); a size here replaces them",
                     frame.config.settings.packs.num_packs);
  } else if (pack_kib_ == 0) {
    text_wrapped_dim("0: the gradients in one buffer, all-reduced after backward");
  }
  ImGui::Checkbox("overlap packs with backward", &overlap_);
  // Each device's memory limit last: a row a device, the model and the algorithm read first.
  for (int i = 0; i < gpus_; ++i) {
    ImGui::PushID(i);
    ImGui::PushStyleColor(ImGuiCol_FrameBg, replica_color(i, 90));
    ImGui::InputInt("", &memory_mib_[static_cast<std::size_t>(i)], 64, 256);
    ImGui::PopStyleColor();
    ImGui::SameLine();
    ImGui::Text("MiB /gpu:%d", i);
    memory_mib_[static_cast<std::size_t>(i)] =
        std::max(1, memory_mib_[static_cast<std::size_t>(i)]);
    ImGui::PopID();
  }
  ImGui::PopItemWidth();
  if (ImGui::Button("Apply", ImVec2(ImGui::GetContentRegionAvail().x, 0))) {
    core::SessionConfig config = frame.config;
    core::RunSettings& s = config.settings;
    s.devices.gpus = gpus_;
    s.devices.memory_limits_mib.assign(memory_mib_.begin(), memory_mib_.end());
    s.model = core::choices_of<core::ModelKind>()[static_cast<std::size_t>(model_)].value;
    s.allreduce = algorithm_choices()[static_cast<std::size_t>(algorithm_)];
    s.batch_per_replica = static_cast<std::size_t>(batch_);
    s.optimizer.learning_rate = learning_rate_;
    if (pack_kib_ != loaded_pack_kib_) {  // else as loaded, to the byte
      s.packs.num_packs = 0;
      s.packs.bytes_per_pack = static_cast<std::size_t>(pack_kib_) * 1024;
    }
    s.packs.overlap = overlap_;
    frame.actions.reconfigure(config);
  }
}

}  // namespace mirrorlab::gui
