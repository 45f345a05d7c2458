#include "gui/panels/compare/compare_panel.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
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
    ++shared_->version;
    shared_->session = &session;
  }
  std::shared_ptr<Shared> shared = shared_;
  core::TrainingSession* s = &session;
  session.post([shared, s] {
    core::ComparisonOptions options;
    options.batch_per_replica = s->config().settings.batch_per_replica;
    const auto publish = [&](const core::AlgorithmComparison& r) {
      std::lock_guard lock(shared->mutex);
      shared->result = r;
      ++shared->version;
    };
    const core::AlgorithmComparison r = core::compare_algorithms(
        s->devices(), s->data().train, core::strategy_options(s->config().settings), options,
        [s] { return s->stopping(); }, publish);
    std::lock_guard lock(shared->mutex);
    shared->result = r;
    ++shared->version;
    shared->running = false;
  });
}

void ComparePanel::Draw(FrameContext& frame) {
  two_tabs(
      "compare tabs",
      {{"Measured here", "Measured", "Here"}, {"Predicted on a machine", "Predicted", "Model"}},
      &frame.view.compare_shows_machine, &tab_shown_, [&](int tab) {
        if (tab == 0) {
          draw_measured(frame);
        } else {
          machine_view_.Draw(frame, name());
        }
      });
}

void ComparePanel::update_predictions(const FrameContext& frame) {
  if (frame.machines == nullptr) return;
  const std::size_t devices = frame.run.devices.size();
  if (predicted_version_ == result_version_ && predicted_catalog_ == frame.machines->version() &&
      predicted_devices_ == devices) {
    return;
  }
  predicted_version_ = result_version_;
  predicted_catalog_ = frame.machines->version();
  predicted_devices_ = devices;
  predictions_ = predict_measured(result_, static_cast<int>(devices), frame.machines->fitted());
}

void ComparePanel::draw_measured(FrameContext& frame) {
  // A picture sized to its room, from before its first data on: it keeps the room the layout
  // gives it (gui/drawing/content_height.h).
  fills_room();
  if (frame.session == nullptr) {
    text_wrapped("No run.");
    return;
  }
  bool running = false, stale = false;
  {
    std::lock_guard lock(shared_->mutex);  // held only to copy: the task publishes under it
    if (result_version_ != shared_->version) {
      result_ = shared_->result;
      result_version_ = shared_->version;
    }
    running = shared_->running;
    stale = shared_->session != nullptr && shared_->session != frame.run.session;
  }
  update_predictions(frame);
  if (!frame.run.driven_by.empty()) {  // the devices are busy with the driver's run
    text_wrapped_dim(
        "Measuring the algorithms trains a model of each on these devices, which the run "
        "trained from %s uses: measure them in the mirrorlab gui window (the Predicted tab "
        "works here).",
        frame.run.driven_by.c_str());
    draw_fit_line(frame);
    return;
  }
  ImGui::BeginDisabled(running);
  if (ImGui::Button(running ? "Measuring..." : "Measure algorithms")) start(*frame.session);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::PushTextWrapPos(0);
  text_wrapped_dim(
      "training pauses while it measures, on these same devices (a model per algorithm: the "
      "Devices panel's memory peaks include them)");
  ImGui::PopTextWrapPos();
  if (stale) ImGui::TextDisabled("(measured with the previous settings)");
  draw_fit_line(frame);
  if (!result_.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(0xD55E00));
    text_wrapped("%s", result_.error.c_str());
    ImGui::PopStyleColor();
  }
  if (result_.timings.empty()) {
    if (!running) text_wrapped("Press the button to time each algorithm in this run.");
    frame.report.drew(name(), "bars", 0);
    return;
  }
  draw_bars(result_, frame);
  draw_sweep(result_, frame);
}

void ComparePanel::draw_fit_line(FrameContext& frame) {
  if (frame.machines == nullptr) return;
  const ModelMachine& fit = frame.machines->fitted();
  if (!predictions_.problem.empty()) {
    say_problem(predictions_.problem);
    frame.report.drew(name(), "fit_missing", 1);
    return;
  }
  frame.report.drew(name(), "fit_missing", 0);
  ImGui::PushTextWrapPos(0);
  text_wrapped_dim("model beside each measurement: %s, %s", fit.id.c_str(),
                   fit.topology->title.c_str());
  ImGui::PopTextWrapPos();
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%s\n%s", fit.topology->path.c_str(), fit.topology->source.c_str());
  }
}

void ComparePanel::draw_bars(const core::AlgorithmComparison& r, FrameContext& frame) {
  text_wrapped("Per training step (gradients: %s per replica, median of %d steps)",
               format_bytes(static_cast<double>(r.gradient_bytes)).c_str(),
               r.timings.empty() ? 0 : r.timings.front().steps);
  double longest = 0;
  for (const auto& t : r.timings) longest = std::max(longest, t.step_seconds);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float label_width = 7.5f * line;
  const float text_width =
      ImGui::CalcTextSize("all-reduce 00.00 ms, model 00.00 ms / step 000.0 ms").x;
  const float width =
      std::max(ImGui::GetContentRegionAvail().x - label_width - text_width - line, 20.f);
  int bars = 0, predicted = 0;
  for (const auto& t : r.timings) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    draw_label(draw, p, rgb(0xE0E0E0), t.algorithm.c_str());
    if (!t.available) {
      ImGui::SetCursorScreenPos(ImVec2(p.x + label_width, p.y));
      draw_nccl_predicted(t, r.gradient_bytes, frame);
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
    std::string text = "all-reduce " + format_seconds(t.all_reduce_seconds);
    if (const timing::Prediction* model = find_prediction(predictions_.training, t.algorithm,
                                                          static_cast<double>(r.gradient_bytes))) {
      text += ", model " + format_seconds(model->predicted);
      ++predicted;
    }
    text += " / step " + format_seconds(t.step_seconds);
    // Beside the bar where it fits before the panel's edge, else under it.
    const float right = p.x + ImGui::GetContentRegionAvail().x;
    const bool beside = x0 + step_w + 6 + ImGui::CalcTextSize(text.c_str()).x <= right;
    draw_label(draw, beside ? ImVec2(x0 + std::max(step_w, 0.0f) + 6, p.y) : ImVec2(x0, p.y + line),
               rgb(0xE0E0E0), text.c_str());
    ImGui::Dummy(ImVec2(label_width + width, line * (beside ? 1.25f : 2.25f)));
    bars += 2;
  }
  ImGui::PushTextWrapPos(0);
  text_wrapped_dim(
      "full colour: all-reduce (from the first replica's arrival: it includes "
      "waiting for the others); pale: the rest of the step%s",
      predicted > 0 ? "; model: the all-reduce alone, from this machine's fit" : "");
  ImGui::PopTextWrapPos();
  frame.report.drew(name(), "bars", bars);
  frame.report.drew(name(), "bars_predicted", predicted);
}

void ComparePanel::draw_nccl_predicted(const core::AlgorithmTiming& t, std::size_t gradient_bytes,
                                       FrameContext& frame) {
  // The reason's first clause says it ("needs one CUDA GPU per replica, but these are
  // CPU-backed virtual GPUs"); the whole of it is a hover away, so the sweep stays in view.
  const std::string gist = t.reason.substr(0, t.reason.find(": use"));
  const ModelMachine* machine =
      frame.machines != nullptr ? frame.machines->find(frame.view.model_machine) : nullptr;
  const double bytes = static_cast<double>(gradient_bytes);
  if (machine != nullptr && machine->topology && bytes > 0 &&
      (!nccl_on_machine_ || nccl_machine_ != machine->id ||
       nccl_catalog_ != frame.machines->version() || nccl_bytes_ != gradient_bytes)) {
    nccl_machine_ = machine->id;
    nccl_catalog_ = frame.machines->version();
    nccl_bytes_ = gradient_bytes;
    try {
      nccl_on_machine_ = predict_on_machine(*machine->topology, {bytes}).front();
    } catch (const std::exception&) {
      nccl_on_machine_.reset();
    }
  }
  const bool shown = machine != nullptr && machine->topology && nccl_on_machine_ &&
                     nccl_machine_ == machine->id && nccl_on_machine_->nccl;
  ImGui::PushTextWrapPos(0);
  if (shown) {
    const SizePrediction& p = *nccl_on_machine_;
    tag("PREDICTED", kPredictedRgb);
    std::string fallback;
    if (!p.algorithms.empty()) {
      fallback = "; " + p.algorithms.front().algorithm + " there " +
                 format_seconds(p.algorithms.front().predicted);
    }
    text_wrapped(
        "not measured: %s on %s's %d GPUs for these gradients (NCCL's model picks "
        "%s%s). It cannot run here: %s.",
        format_seconds(p.nccl->time_us * 1e-6).c_str(), machine->id.c_str(),
        machine->topology->ranks(), nccl_pick_text(*p.nccl).c_str(), fallback.c_str(),
        gist.c_str());
  } else {
    text_wrapped_dim(
        "cannot run here: %s. Choose a machine with one GPU per rank under "
        "'Predicted on a machine' for NCCL's predicted time.",
        gist.c_str());
  }
  ImGui::PopTextWrapPos();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t.reason.c_str());
  frame.report.drew(name(), "nccl_predicted", shown ? 1 : 0);
}

void ComparePanel::draw_sweep(const core::AlgorithmComparison& r, FrameContext& frame) {
  if (r.sweep.empty()) {
    frame.report.drew(name(), "sweep_points", 0);
    return;
  }
  std::map<std::string, ChartSeries> algbw, busbw, model;
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
    // The model's algbw at the same size, as a dashed line beside the measured points.
    const double bytes = static_cast<double>(row.bytes);
    if (const timing::Prediction* p = find_prediction(predictions_.sweep, row.algorithm, bytes);
        p != nullptr && p->predicted > 0) {
      ChartSeries& m = model[row.algorithm];
      m.label = row.algorithm + " model";
      m.color = algorithm_color(row.algorithm);
      m.dashed = true;
      m.x.push_back(bytes);
      m.y.push_back(bytes / p->predicted / 1e9);
    }
  }
  std::vector<ChartSeries> left, right;
  for (auto& [_, s] : algbw) left.push_back(s);
  for (auto& [_, s] : model) left.push_back(s);
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
  frame.report.drew(name(), "sweep_model_lines", static_cast<double>(model.size()));
  frame.report.drew(name(), "sweep_segments", drawn);
}

}  // namespace mirrorlab::gui
