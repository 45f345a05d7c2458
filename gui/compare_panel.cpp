#include "gui/compare_panel.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gui/chart.h"
#include "gui/colors.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

std::string bytes_label(double b) { return format_bytes(b); }

}  // namespace

void ComparePanel::start(core::TrainingSession& session) {
  {
    std::lock_guard lock(shared_->mutex);
    if (shared_->running) return;
    shared_->running = true;
    shared_->result = core::AlgorithmComparison{};
    shared_->session = &session;
  }
  std::shared_ptr<Shared> shared = shared_;
  core::TrainingSession* s = &session;
  session.post([shared, s] {
    core::ComparisonOptions options;
    options.batch_per_replica = s->config().fit.batch_per_replica;
    const auto publish = [&](const core::AlgorithmComparison& r) {
      std::lock_guard lock(shared->mutex);
      shared->result = r;
    };
    const core::AlgorithmComparison r = core::compare_algorithms(
        s->devices(), s->data().train, s->config().strategy, options, [s] { return s->stopping(); },
        publish);
    std::lock_guard lock(shared->mutex);
    shared->result = r;
    shared->running = false;
  });
}

void ComparePanel::Draw(FrameContext& frame) {
  if (frame.session == nullptr) {
    ImGui::TextWrapped("No run.");
    return;
  }
  core::AlgorithmComparison result;
  bool running = false, stale = false;
  {
    std::lock_guard lock(shared_->mutex);  // held only to copy: the task publishes under it
    result = shared_->result;
    running = shared_->running;
    stale = shared_->session != nullptr && shared_->session != frame.run.session;
  }
  ImGui::BeginDisabled(running);
  if (ImGui::Button(running ? "Measuring..." : "Measure algorithms")) start(*frame.session);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::PushTextWrapPos(0);
  ImGui::TextDisabled(
      "training pauses while it measures, on these same devices (a model per algorithm: the "
      "Devices panel's memory peaks include them)");
  ImGui::PopTextWrapPos();
  if (stale) ImGui::TextDisabled("(measured with the previous settings)");
  if (!result.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
    ImGui::TextWrapped("%s", result.error.c_str());
    ImGui::PopStyleColor();
  }
  if (result.timings.empty()) {
    if (!running) ImGui::TextWrapped("Press the button to time each algorithm in this run.");
    frame.report.drew(name(), "bars", 0);
    return;
  }
  draw_bars(result, frame);
  draw_sweep(result, frame);
}

void ComparePanel::draw_bars(const core::AlgorithmComparison& r, FrameContext& frame) {
  ImGui::TextWrapped("Per training step (gradients: %s per replica, median of %d steps)",
                     format_bytes(static_cast<double>(r.gradient_bytes)).c_str(),
                     r.timings.empty() ? 0 : r.timings.front().steps);
  double longest = 0;
  for (const auto& t : r.timings) longest = std::max(longest, t.step_seconds);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float label_width = 7.5f * line;
  const float text_width = ImGui::CalcTextSize("all-reduce 00.00 ms / step 000.0 ms").x;
  const float width =
      std::max(ImGui::GetContentRegionAvail().x - label_width - text_width - line, 20.f);
  int bars = 0;
  for (const auto& t : r.timings) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    draw->AddText(p, rgb(0xE0E0E0), t.algorithm.c_str());
    if (!t.available) {
      ImGui::SetCursorScreenPos(ImVec2(p.x + label_width, p.y));
      // The reason's first clause says it ("needs one CUDA GPU per replica, but these are
      // CPU-backed virtual GPUs"); the whole of it is a hover away, so the sweep stays in view.
      const std::string gist = t.reason.substr(0, t.reason.find(" ("));
      ImGui::PushTextWrapPos(0);
      ImGui::TextDisabled("not available here: %s", gist.c_str());
      ImGui::PopTextWrapPos();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t.reason.c_str());
      continue;
    }
    // Two bars per algorithm: the whole step (light) with its all-reduce part (full colour).
    const float x0 = p.x + label_width;
    const float step_w = longest > 0 ? static_cast<float>(t.step_seconds / longest) * width : 0;
    const float ar_w = longest > 0 ? static_cast<float>(t.all_reduce_seconds / longest) * width : 0;
    const std::uint32_t color = algorithm_color(t.algorithm);
    draw->AddRectFilled(ImVec2(x0, p.y), ImVec2(x0 + step_w, p.y + line),
                        (color & 0x00FFFFFF) | 0x60000000);
    draw->AddRectFilled(ImVec2(x0, p.y), ImVec2(x0 + ar_w, p.y + line), color);
    char text[96];
    std::snprintf(text, sizeof text, "all-reduce %.2f ms / step %.1f ms",
                  1e3 * t.all_reduce_seconds, 1e3 * t.step_seconds);
    draw->AddText(ImVec2(x0 + std::max(step_w, 0.0f) + 6, p.y), rgb(0xE0E0E0), text);
    ImGui::Dummy(ImVec2(label_width + width, line * 1.25f));
    bars += 2;
  }
  ImGui::TextDisabled("full colour: all-reduce; pale: the rest of the step");
  frame.report.drew(name(), "bars", bars);
}

void ComparePanel::draw_sweep(const core::AlgorithmComparison& r, FrameContext& frame) {
  if (r.sweep.empty()) {
    frame.report.drew(name(), "sweep_points", 0);
    return;
  }
  std::map<std::string, ChartSeries> algbw, busbw;
  for (const auto& row : r.sweep) {
    ChartSeries& a = algbw[row.algorithm];
    ChartSeries& b = busbw[row.algorithm];
    a.label = row.algorithm + " algbw";
    b.label = row.algorithm + " busbw";
    a.color = b.color = algorithm_color(row.algorithm);
    a.markers = b.markers = true;
    a.x.push_back(static_cast<double>(row.bytes));
    a.y.push_back(row.algbw / 1e9);
    b.x.push_back(static_cast<double>(row.bytes));
    b.y.push_back(row.busbw / 1e9);
  }
  std::vector<ChartSeries> left, right;
  for (auto& [_, s] : algbw) left.push_back(s);
  for (auto& [_, s] : busbw) right.push_back(s);
  if (r.copy_bandwidth > 0 && !left.empty()) {
    // The single-memory bound: T_min = 2*N*S/B, so algbw = S/T <= B / (2N).
    // Sizes that fit in the CPU caches can beat it: caches are faster than memory.
    ChartSeries bound{"one-memory bound B/2N", rgb(0xBBBBBB), {}, {}, false};
    const double n = static_cast<double>(frame.run.devices.size());
    for (double x : left.front().x) {
      bound.x.push_back(x);
      bound.y.push_back(r.copy_bandwidth / (2 * n) / 1e9);
    }
    left.push_back(bound);
  }
  ChartOptions o;
  o.log_x = true;
  o.x_label = "bytes per replica";
  o.y_label = "algbw GB/s";
  o.y_from_zero = true;
  o.x_format = bytes_label;
  const float w = ImGui::GetContentRegionAvail().x / 2 - 4;
  const float h = std::max(ImGui::GetContentRegionAvail().y, 6 * ImGui::GetTextLineHeight());
  int drawn = draw_chart("algbw", left, o, w, h);
  ImGui::SameLine();
  o.y_label = "busbw GB/s";
  drawn += draw_chart("busbw", right, o, w, h);
  frame.report.drew(name(), "sweep_points", static_cast<double>(r.sweep.size()));
  frame.report.drew(name(), "sweep_segments", drawn);
}

}  // namespace mirrorlab::gui
