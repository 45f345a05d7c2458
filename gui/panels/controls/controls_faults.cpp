// The Controls panel's faults (a straggler, a device that fails, a NaN: core/strategy/faults.h),
// applied to the run from its next step, and its checkpoint: save the run so far, or load the
// newest checkpoint of a folder and go on from it.
#include <algorithm>
#include <string>
#include <vector>

#include "gui/drawing/colors.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/controls/controls_panel.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

constexpr core::FailurePhase kFailurePhases[] = {
    core::FailurePhase::kSplit, core::FailurePhase::kForward, core::FailurePhase::kBackward,
    core::FailurePhase::kAllReduce};

// A combo of "none" and the run's devices; `device` -1 is none.
void device_combo(const char* label, int* device, int devices) {
  const std::string shown = *device < 0 ? "none" : "/gpu:" + std::to_string(*device);
  if (!ImGui::BeginCombo(label, shown.c_str())) return;
  if (ImGui::Selectable("none", *device < 0)) *device = -1;
  for (int d = 0; d < devices; ++d) {
    const std::string name = "/gpu:" + std::to_string(d);
    if (ImGui::Selectable(name.c_str(), *device == d)) *device = d;
  }
  ImGui::EndCombo();
}

void note(const std::string& text, bool trouble) {
  if (text.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, trouble ? rgb(0xD55E00) : rgb(0xA0A0A8));
  text_wrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void ControlsPanel::load_faults(const core::FaultPlan& plan) {
  slow_device_ = fail_device_ = nan_device_ = -1;
  if (!plan.slow.empty()) {
    slow_device_ = plan.slow[0].device;
    slow_factor_ = static_cast<float>(plan.slow[0].factor);
  }
  if (!plan.failures.empty()) {
    fail_device_ = plan.failures[0].device;
    fail_step_ = static_cast<int>(std::min<std::int64_t>(plan.failures[0].step, 1 << 30));
    fail_phase_ = static_cast<int>(plan.failures[0].phase);
  }
  if (!plan.nans.empty()) {
    nan_device_ = plan.nans[0].device;
    nan_step_ = static_cast<int>(std::min<std::int64_t>(plan.nans[0].step, 1 << 30));
  }
}

void ControlsPanel::draw_faults(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  const int devices = static_cast<int>(run.devices.size());
  ImGui::TextUnformatted("Faults (from the next step)");
  // Several workers: the session refuses faults (they are built for one worker's devices), so
  // the controls are off and say so before anyone tries (the checkpoint's buttons likewise).
  const bool several_workers = !run.workers.empty();
  const bool enabled = frame.session != nullptr && !several_workers;
  frame.report.drew(name(), "faults_enabled", enabled ? 1 : 0);
  ImGui::BeginDisabled(!enabled);
  // A step still to come, by default a few steps ahead of the run.
  const int next = static_cast<int>(std::min<std::int64_t>(run.steps_done + 1, 1 << 30));
  if (fail_step_ < next) fail_step_ = next + 4;
  if (nan_step_ < next) nan_step_ = next + 4;
  for (int* d : {&slow_device_, &fail_device_, &nan_device_}) {
    if (*d >= devices) *d = -1;
  }
  // One row per fault: its name, the device, then its number.
  const float start = ImGui::GetCursorPosX();
  const float label = ImGui::CalcTextSize("straggler").x + 2 * ImGui::GetStyle().ItemSpacing.x;
  const float avail = ImGui::GetContentRegionAvail().x - label;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  auto row = [&](const char* name, const char* id, int* device) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(name);
    ImGui::SameLine(start + label);
    ImGui::SetNextItemWidth(avail * 0.45f);
    device_combo(id, device, devices);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(avail * 0.55f - spacing);
  };
  row("straggler", "##slow", &slow_device_);
  ImGui::SliderFloat("##factor", &slow_factor_, 1.0f, 20.0f, "%.1fx slower",
                     ImGuiSliderFlags_AlwaysClamp | ImGuiSliderFlags_Logarithmic);
  row("fails", "##fail", &fail_device_);
  ImGui::DragInt("##fail step", &fail_step_, 0.2f, next, 1 << 30, "in step %d",
                 ImGuiSliderFlags_AlwaysClamp);
  const char* phases[] = {"in its split", "in its forward pass", "in its backward pass",
                          "in the all-reduce"};
  ImGui::SetCursorPosX(start + label);
  ImGui::SetNextItemWidth(avail);
  ImGui::Combo("##phase", &fail_phase_, phases, 4);
  row("NaN", "##nan", &nan_device_);
  ImGui::DragInt("##nan step", &nan_step_, 0.2f, next, 1 << 30, "in step %d",
                 ImGuiSliderFlags_AlwaysClamp);
  fail_step_ = std::clamp(fail_step_, next, 1 << 30);
  nan_step_ = std::clamp(nan_step_, next, 1 << 30);

  if (ImGui::Button("Apply faults", ImVec2(ImGui::GetContentRegionAvail().x, 0))) {
    core::FaultPlan plan;
    if (slow_device_ >= 0) plan.slow.push_back({slow_device_, slow_factor_});
    if (fail_device_ >= 0) {
      plan.failures.push_back(
          {fail_device_, fail_step_, kFailurePhases[std::clamp(fail_phase_, 0, 3)], -1});
    }
    if (nan_device_ >= 0) plan.nans.push_back({nan_device_, nan_step_});
    frame.session->set_faults(plan);
  }
  ImGui::EndDisabled();
  if (several_workers) {
    note("Not with several workers: faults are built for one worker's devices.", false);
    return;
  }
  const bool refused = run.faults_note.rfind("These faults cannot", 0) == 0;
  note(run.faults_note.empty() ? "None: every device computes at its own speed." : run.faults_note,
       refused);
}

void ControlsPanel::draw_checkpoint(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  ImGui::TextUnformatted("Checkpoint");
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.7f);
  ImGui::InputText("folder", checkpoint_folder_, sizeof checkpoint_folder_);
  // Several workers: the session refuses to save or resume (as `mirrorlab train` does).
  const bool several_workers = !run.workers.empty();
  const bool named = checkpoint_folder_[0] != '\0' && !several_workers;
  const float w = ImGui::GetContentRegionAvail().x;
  const ImVec2 button((w - ImGui::GetStyle().ItemSpacing.x) / 2, 0);
  ImGui::BeginDisabled(frame.session == nullptr || !named);
  if (ImGui::Button("Save", button)) frame.session->save_checkpoint(checkpoint_folder_);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!named);
  if (ImGui::Button("Load newest", button)) frame.actions.load_checkpoint(checkpoint_folder_);
  ImGui::EndDisabled();
  if (several_workers) {
    note("Not with several workers: checkpoints are built for one worker.", false);
    return;
  }
  if (!frame.actions.load_error().empty()) {
    note("Not loaded: " + frame.actions.load_error(), true);
  } else {
    note(run.checkpoint_note, run.checkpoint_note.rfind("Not saved", 0) == 0);
    for (const std::string& change : run.resume_changes) note("Changed: " + change, false);
  }
}

}  // namespace mirrorlab::gui
