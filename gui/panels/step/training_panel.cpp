#include "gui/panels/step/training_panel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/step/step_lines.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

// Each step's own loss and accuracy: the train colour, faint, under its smoothed curve.
constexpr std::uint32_t kEachStepColor = IM_COL32(0xE6, 0x9F, 0x00, 0x60);

}  // namespace

void TrainingPanel::follow(const core::SessionSnapshot& run) {
  if (session_ != run.session || steps_seen_ > run.steps.size()) {
    session_ = run.session;
    steps_seen_ = epochs_seen_ = 0;
    loss_ = {"train, smoothed", rgb(0xE69F00), {}, {}, false};
    accuracy_ = {"train, smoothed", rgb(0xE69F00), {}, {}, false};
    loss_steps_ = {"each step", kEachStepColor, {}, {}, false};
    accuracy_steps_ = {"each step", kEachStepColor, {}, {}, false};
    val_loss_ = {"test", rgb(0x56B4E9), {}, {}, true};
    val_accuracy_ = {"test", rgb(0x56B4E9), {}, {}, true};
  }
  // An exponential moving average, as TensorBoard smooths: single steps of 64 images are noisy.
  for (; steps_seen_ < run.steps.size(); ++steps_seen_) {
    const core::StepRecord& s = run.steps[steps_seen_];
    const double a = steps_seen_ == 0 ? 1.0 : 0.1;
    smooth_loss_ += a * (s.loss - smooth_loss_);
    smooth_accuracy_ += a * (s.accuracy - smooth_accuracy_);
    loss_.x.push_back(static_cast<double>(s.step));
    loss_.y.push_back(smooth_loss_);
    accuracy_.x.push_back(static_cast<double>(s.step));
    accuracy_.y.push_back(smooth_accuracy_);
    loss_steps_.x.push_back(static_cast<double>(s.step));
    loss_steps_.y.push_back(s.loss);
    accuracy_steps_.x.push_back(static_cast<double>(s.step));
    accuracy_steps_.y.push_back(s.accuracy);
  }
  for (; epochs_seen_ < run.epoch_logs.size(); ++epochs_seen_) {
    const core::EpochLog& e = run.epoch_logs[epochs_seen_];
    if (!e.has_validation) continue;
    // At the epoch's last step: steps before it plus its own.
    double step = 0;
    for (std::size_t i = 0; i <= epochs_seen_; ++i) step += run.epoch_logs[i].steps;
    val_loss_.x.push_back(step);
    val_loss_.y.push_back(e.validation.loss);
    val_accuracy_.x.push_back(step);
    val_accuracy_.y.push_back(e.validation.accuracy);
  }
}

void TrainingPanel::Draw(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  // A run with no step yet while a lesson asks: a sentence, and the room left to the step's text.
  if (run.steps.empty() && shows_the_lesson_asks(frame, "The run's progress (loss, accuracy)"))
    return;
  // A picture sized to its room, from before its first data on: it keeps the room the layout
  // gives it (gui/drawing/content_height.h).
  fills_room();
  if (frame.session == nullptr) {
    text_wrapped("No run.");
    return;
  }
  follow(run);
  if (!run.driven_by.empty() && run.steps.empty() && run.steps_done > 0) {
    // A watched run with no fit since the window opened (a custom loop's steps, or a fit's from
    // before): those steps told the window no loss.
    text_wrapped(
        "%lld step%s so far. The curves draw the steps model.fit takes while the "
        "window watches; the other panels show every step.",
        static_cast<long long>(run.steps_done), run.steps_done == 1 ? "" : "s");
    return;
  }
  const double ips = run.images_per_second();
  text_wrapped("%.0f images/s", ips);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("over the last 20 steps, all replicas together, step time only");
  }
  // The two charts side by side where the panel is wide (a projector's presenter layout), else
  // one above the other. Where the words would leave no room for a chart (a small panel: the
  // usual layout on a laptop's screen), the charts come first, sized to the panel, and the
  // words after them (the panel scrolls to them): the curves are what the panel is for; not in
  // a panel too narrow for a chart's labels (a large font), where the numbers say more. The
  // words' height is the last frame's.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 room = ImGui::GetContentRegionAvail();
  const bool charts_first =
      words_height_ > 0 && room.y - words_height_ < 5 * line && room.x >= 9 * line;
  if (charts_first) draw_charts(frame, room);
  const float top = ImGui::GetCursorPosY();
  draw_words(frame);
  words_height_ = ImGui::GetCursorPosY() - top;
  if (!charts_first) draw_charts(frame, ImGui::GetContentRegionAvail());
  frame.report.drew(name(), "charts_first", charts_first ? 1 : 0);
  frame.report.drew(name(), "images_per_second", ips);
}

void TrainingPanel::draw_words(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  ImGui::PushTextWrapPos(0);
  for (const std::string& line :
       {step_time_line(run), gradient_weight_line(frame), reference_distance_line(frame)}) {
    if (!line.empty()) text_wrapped_unformatted(line);
  }
  if (!run.steps.empty()) {
    const core::StepRecord& s = run.steps.back();
    text_wrapped("step %lld: loss %.4g, accuracy %.3f on its %lld images",
                 static_cast<long long>(s.step), s.loss, s.accuracy,
                 static_cast<long long>(s.examples));
  } else {
    text_wrapped_dim("no step yet: press Run or One step");
  }
  if (!run.epoch_logs.empty()) {
    const core::EpochLog& e = run.epoch_logs.back();
    text_wrapped("epoch %d: loss %.4g, accuracy %.4f; test loss %.4g, accuracy %.4f", e.epoch,
                 e.train.loss, e.train.accuracy, e.validation.loss, e.validation.accuracy);
  }
  if (run.diverged) {
    ImGui::TextColored(ImVec4(0.84f, 0.37f, 0.0f, 1.0f),
                       "diverged in step %lld: the curves stop at the last good step",
                       static_cast<long long>(run.diverged->step));
    frame.report.drew("Training", "diverged_step", static_cast<double>(run.diverged->step));
  } else if (run.loss_growth) {
    ImGui::TextColored(ImVec4(0.84f, 0.37f, 0.0f, 1.0f),
                       "diverging: the loss of step %lld is %.3g, over %.0fx the %.3g of step 1; "
                       "lower the learning rate",
                       static_cast<long long>(run.loss_growth->step), run.loss_growth->loss,
                       core::kLossGrowthFactor, run.loss_growth->first_loss);
    frame.report.drew("Training", "loss_growth_step", static_cast<double>(run.loss_growth->step));
  }
  ImGui::PopTextWrapPos();
}

// The loss and accuracy charts in `room`: never so small that the axes' labels run into each
// other or into the text above (a small panel scrolls to its charts instead). One above the
// other where each gets 8 lines; in less, each as tall as the room, the accuracy scrolled to: a
// narrow chart's legend takes a line a series, and two would each keep a sliver of a plot.
void TrainingPanel::draw_charts(FrameContext& frame, ImVec2 room) {
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const bool beside = room.x >= 2 * 18 * line;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float width = beside ? (room.x - spacing) / 2 : room.x;
  const float stacked = room.y / 2 - 4 >= 8 * line ? room.y / 2 - 4 : room.y - 4;
  const float height = std::max(beside ? room.y - 4 : stacked, 5 * line);
  ChartOptions loss_options;
  loss_options.x_label = "global step";
  loss_options.y_label = "loss";
  loss_options.y_from_zero = true;
  int drawn = draw_chart("loss", {loss_steps_, loss_, val_loss_}, loss_options, width, height);
  // Whether the loss chart is in view whole, unscrolled (the panel's window's bottom edge).
  const float window_bottom = ImGui::GetWindowPos().y + ImGui::GetWindowHeight();
  frame.report.drew(name(), "loss_chart_whole",
                    ImGui::GetScrollY() == 0 && ImGui::GetItemRectMax().y <= window_bottom ? 1 : 0);
  if (beside) ImGui::SameLine(0, spacing);
  ChartOptions accuracy_options = loss_options;
  accuracy_options.y_label = "accuracy";
  accuracy_options.y_format = "%.2f";
  std::vector<double> ends;  // where the chart's each-step and smoothed curves end
  drawn += draw_chart("accuracy", {accuracy_steps_, accuracy_, val_accuracy_}, accuracy_options,
                      width, height, &ends);
  frame.report.drew(name(), "points", static_cast<double>(loss_.x.size()));
  if (!accuracy_steps_.y.empty() && std::isfinite(ends[0]) && std::isfinite(ends[1])) {
    frame.report.drew(name(), "last_step_accuracy_charted", ends[0]);
    frame.report.drew(name(), "last_smoothed_accuracy", ends[1]);
  }
  frame.report.drew(name(), "segments", drawn);
}

}  // namespace mirrorlab::gui
