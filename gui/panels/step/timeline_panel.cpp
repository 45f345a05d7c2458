#include "gui/panels/step/timeline_panel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/session/step_figures.h"
#include "core/strategy/events/run_events.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/step/step_lines.h"
#include "gui/panels/step/step_moment.h"
#include "imgui.h"

namespace mirrorlab::gui {

std::vector<TimelineBlock> layout_lane(const std::vector<TimelineSpan>& spans, double t0, double t1,
                                       float width, float min_pixels) {
  std::vector<TimelineBlock> blocks;
  if (spans.empty() || t1 <= t0 || width <= 0) return blocks;
  const double scale = width / (t1 - t0);
  // Spans are sorted by begin and do not overlap within a lane, so ends are sorted too: the
  // first visible span is the first whose end is past t0.
  auto it = std::lower_bound(spans.begin(), spans.end(), t0,
                             [](const TimelineSpan& s, double t) { return s.end < t; });
  for (; it != spans.end() && it->begin <= t1; ++it) {
    const float x0 = static_cast<float>((it->begin - t0) * scale);
    const float x1 = static_cast<float>((it->end - t0) * scale);
    const std::size_t index = static_cast<std::size_t>(it - spans.begin());
    const bool narrow = x1 - x0 < min_pixels;
    if (narrow && !blocks.empty()) {
      TimelineBlock& last = blocks.back();
      // Join the previous block if it is a fold (or a narrow span) and touches this one.
      const bool last_narrow = last.count > 1 || last.x1 - last.x0 < min_pixels;
      if (last_narrow && x0 - last.x1 < min_pixels) {
        last.x1 = std::max(last.x1, x1);
        ++last.count;
        continue;
      }
    }
    blocks.push_back({x0, x1, index, 1});
  }
  for (TimelineBlock& b : blocks) {  // a fold is at least visible
    if (b.x1 - b.x0 < 1.0f) b.x1 = b.x0 + 1.0f;
  }
  return blocks;
}

void TimelinePanel::follow(const core::SessionSnapshot& run) {
  if (session_ != run.session || events_seen_ > run.events.size()) {
    session_ = run.session;
    zoomed_ = false;
    hidden_counted_ = static_cast<std::size_t>(-1);
    events_seen_ = 0;
    lanes_.assign(2 * run.devices.size(), {});
    latest_ = 0;
    follow_latest_ = true;
  }
  for (; events_seen_ < run.events.size(); ++events_seen_) {
    const core::RunEvent& e = run.events[events_seen_];
    if (e.device < 0 || e.device >= static_cast<int>(lanes_.size())) continue;
    TimelineSpan span{vgpu::seconds_between(run.origin, e.begin),
                      vgpu::seconds_between(run.origin, e.end), events_seen_};
    std::vector<TimelineSpan>& lane =
        lanes_[2 * static_cast<std::size_t>(e.device) + (e.lane == core::Lane::kCommunication)];
    // A device records phases in order, but keep the lane sorted whatever comes.
    auto at = std::upper_bound(lane.begin(), lane.end(), span.begin,
                               [](double t, const TimelineSpan& s) { return t < s.begin; });
    lane.insert(at, span);
    latest_ = std::max(latest_, span.end);
  }
  shown_.clear();
  for (std::size_t l = 0; l < lanes_.size(); ++l) {
    if (l % 2 == 0 || !lanes_[l].empty()) shown_.push_back(l);
  }
}

void TimelinePanel::handle_mouse(float left, float width) {
  const ImGuiIO& io = ImGui::GetIO();
  if (!ImGui::IsItemHovered()) return;
  const double span = t1_ - t0_;
  if (io.MouseWheel != 0) {
    const double at = t0_ + (io.MousePos.x - left) / width * span;
    const double factor = std::pow(0.8, io.MouseWheel);
    const double new_span = std::clamp(span * factor, 1e-6, 1e6);
    t0_ = at - (at - t0_) * new_span / span;
    t1_ = t0_ + new_span;
    follow_width_ = new_span;
    zoomed_ = true;
  }
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    const double dt = -io.MouseDelta.x / width * span;
    t0_ += dt;
    t1_ += dt;
    follow_latest_ = false;
  }
}

// A lane is at most this many lines tall: more room is left empty below the lanes.
constexpr float kTallestLaneLines = 3;
// Pixels between one lane and the next.
constexpr float kLaneGap = 4;

// Where the axis and the lanes go.
struct LaneArea {
  ImVec2 corner, avail;       // of the whole area, axis included
  float line = 0;             // text line height
  float left = 0, width = 0;  // of the spans, right of the lanes' labels
  float axis_height = 0, lane_height = 0;
  float lane_top(std::size_t d) const {
    return corner.y + axis_height + static_cast<float>(d) * (lane_height + kLaneGap);
  }
};

// What the lanes drew, and the span or fold under the pointer.
struct LanesDrawn {
  std::size_t spans = 0, folds = 0;
  const TimelineSpan* hovered = nullptr;
  std::size_t hovered_fold = 0;  // 1: a span; more: a fold of that many
};

namespace {

LaneArea plan_area(std::size_t lanes) {
  LaneArea area;
  area.line = ImGui::GetTextLineHeight();
  area.corner = ImGui::GetCursorScreenPos();
  area.avail = ImGui::GetContentRegionAvail();
  const float label_width = 4.5f * area.line;
  area.left = area.corner.x + label_width;
  area.width = std::max(area.avail.x - label_width, 10.0f);
  area.axis_height = area.line * 1.4f;
  area.lane_height =
      std::clamp((area.avail.y - area.axis_height) / std::max<std::size_t>(lanes, 1) - kLaneGap,
                 area.line, kTallestLaneLines * area.line);
  return area;
}

// Time axis: ticks at a round step (1, 2 or 5 times a power of ten), labelled in s, ms or us.
void draw_time_axis(ImDrawList* draw, const LaneArea& area, double t0, double t1) {
  const double span = t1 - t0;
  const double raw = span / 6;
  const double pow10 = std::pow(10.0, std::floor(std::log10(raw)));
  const double tick = raw / pow10 < 2 ? 2 * pow10 : raw / pow10 < 5 ? 5 * pow10 : 10 * pow10;
  char text[96];
  for (double t = std::ceil(t0 / tick) * tick; t <= t1; t += tick) {
    const float x = area.left + static_cast<float>((t - t0) / span * area.width);
    draw->AddLine(ImVec2(x, area.corner.y + area.line), ImVec2(x, area.corner.y + area.avail.y),
                  rgb(0x34343C));
    if (tick >= 1)
      std::snprintf(text, sizeof text, "%.0f s", t);
    else if (tick >= 1e-3)
      std::snprintf(text, sizeof text, "%.0f ms", t * 1e3);
    else
      std::snprintf(text, sizeof text, "%.0f us", t * 1e6);
    // A label that would run past the lanes' right edge is left out, not cut.
    if (x + 2 + ImGui::CalcTextSize(text).x > area.left + area.width) continue;
    draw_label(draw, ImVec2(x + 2, area.corner.y), rgb(0x909098), text);
  }
}

void draw_span(ImDrawList* draw, const LaneArea& area, const core::RunEvent& e, ImVec2 a,
               ImVec2 z) {
  const std::uint32_t fill = phase_rgb(e.phase);
  draw->AddRectFilled(a, z, rgb(fill));
  if (z.x - a.x > 6) draw->AddRect(a, z, rgb(0x000000, 120));
  char pack_label[48];
  std::snprintf(pack_label, sizeof pack_label, "%s %d", core::to_string(e.phase), e.pack + 1);
  const char* label = e.pack >= 0 ? pack_label : core::to_string(e.phase);
  // In the part of the span in view: a span running past either edge keeps its whole label.
  const float from = std::max(a.x, area.left), to = std::min(z.x, area.left + area.width);
  if (to - from > ImGui::CalcTextSize(label).x + 6) {
    draw_label(draw, ImVec2(from + 3, a.y + (area.lane_height - area.line) / 2),
               text_color_on(fill), label);
  }
}

void draw_tooltip(const core::SessionSnapshot& run, const TimelineSpan& hovered, std::size_t fold) {
  const core::RunEvent& e = run.events[hovered.event];
  ImGui::BeginTooltip();
  if (fold > 1) {
    ImGui::Text("%zu spans folded (each narrower than 3 pixels): zoom in to see them", fold);
  } else {
    ImGui::Text("%s: %s of step %lld", run.devices[static_cast<std::size_t>(e.device)].name.c_str(),
                core::to_string(e.phase), static_cast<long long>(e.step + 1));
    if (e.pack >= 0) {
      ImGui::Text("pack %d of the step's gradients (1: the last layers', all-reduced first)",
                  e.pack + 1);
    }
    if (e.lane == core::Lane::kCommunication) {
      ImGui::TextUnformatted("on the device's communication lane, beside its backward");
    }
    ImGui::Text("starts at %.3f ms, takes %.3f ms", hovered.begin * 1e3,
                (hovered.end - hovered.begin) * 1e3);
    if (e.bytes > 0) ImGui::Text("%.2f MiB moved", static_cast<double>(e.bytes) / (1 << 20));
  }
  ImGui::EndTooltip();
}

}  // namespace

void TimelinePanel::draw_packs_line(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  if (run.step_record.step < 0 || run.replicas_in_sync < 2) return;
  // Over every event: recounted when there are new ones, at most twice a second while running.
  if (run.events.size() != hidden_counted_ &&
      (!run.stepping || frame.seconds_since_start - hidden_at_ >= 0.5)) {
    hidden_ = core::hidden_all_reduce(run.events, 1);
    hidden_counted_ = run.events.size();
    hidden_at_ = frame.seconds_since_start;
  }
  const int packs = run.step_record.packs;
  bool lanes = false;
  for (std::size_t l = 1; l < lanes_.size(); l += 2) lanes |= !lanes_[l].empty();
  char text[192];
  if (packs <= 1) {
    std::snprintf(text, sizeof text, "All-reduce: the gradients in 1 pack a step, after backward.");
  } else if (hidden_.all_reduce <= 0) {
    std::snprintf(text, sizeof text, "All-reduce: the gradients in %d packs a step.", packs);
  } else {
    std::snprintf(text, sizeof text,
                  "All-reduce: the gradients in %d packs a step; %.1f%% of their time ran while "
                  "backward still did%s.",
                  packs, 100 * hidden_.hidden / hidden_.all_reduce,
                  lanes ? " (the comm. lanes)" : "");
  }
  text_wrapped_unformatted(text);
  frame.report.drew(name(), "packs", packs);
}

void TimelinePanel::draw_toolbar() {
  ImGui::Checkbox("Follow", &follow_latest_);
  ImGui::SameLine();
  if (ImGui::Button("Whole run")) {
    follow_latest_ = false;
    t0_ = 0;
    t1_ = std::max(latest_, 1e-3);
  }
  ImGui::SameLine();
  text_wrapped_dim("wheel: zoom, drag: pan, hover: details");
  // The key: every phase's colour next to its name.
  constexpr core::Phase kShown[] = {
      core::Phase::kSplit,  core::Phase::kForward,  core::Phase::kBackward, core::Phase::kAllReduce,
      core::Phase::kUpdate, core::Phase::kEvaluate, core::Phase::kWait};
  const float swatch_width = ImGui::GetTextLineHeight() + ImGui::GetStyle().ItemSpacing.x;
  for (core::Phase phase : kShown) {
    if (phase != kShown[0]) {
      next_beside_if_fits(swatch_width + ImGui::CalcTextSize(core::to_string(phase)).x);
    }
    swatch(phase_color(phase));
    ImGui::TextUnformatted(core::to_string(phase));
  }
  next_beside_if_fits(ImGui::CalcTextSize(" grey: folded spans").x);
  ImGui::TextDisabled(" grey: folded spans");
}

LanesDrawn TimelinePanel::draw_lanes(ImDrawList* draw, const core::SessionSnapshot& run,
                                     const LaneArea& area) const {
  LanesDrawn drawn;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const ImVec2 corner = area.corner;
  for (std::size_t row = 0; row < shown_.size(); ++row) {
    const std::size_t l = shown_[row];
    const std::size_t d = l / 2;
    const bool communication = l % 2 == 1;
    const float y0 = area.lane_top(row);
    const float y1 = y0 + area.lane_height;
    draw->AddRectFilled(ImVec2(corner.x, y0),
                        ImVec2(corner.x + area.line * (communication ? 0.25f : 0.5f), y1),
                        replica_color(static_cast<int>(d)));
    // A communication lane is named by what it carries, under its device's.
    draw_label(draw, ImVec2(corner.x + area.line * 0.8f, y0 + (area.lane_height - area.line) / 2),
               rgb(communication ? 0xA0A0A8 : 0xE0E0E0),
               communication ? "comm." : run.devices[d].name.c_str());
    draw->PushClipRect(ImVec2(area.left, y0), ImVec2(area.left + area.width, y1), true);
    const std::vector<TimelineSpan>& lane = lanes_[l];
    for (const TimelineBlock& b : layout_lane(lane, t0_, t1_, area.width)) {
      const ImVec2 a(area.left + b.x0, y0), z(area.left + b.x1, y1);
      const bool inside = mouse.x >= a.x && mouse.x < z.x && mouse.y >= y0 && mouse.y < y1;
      if (b.count > 1) {
        // Tracy's fold: a zig-zag-free grey block that says how many spans it holds.
        draw->AddRectFilled(a, z, rgb(0x707078));
        ++drawn.folds;
        if (inside) drawn.hovered = &lane[b.first], drawn.hovered_fold = b.count;
        continue;
      }
      draw_span(draw, area, run.events[lane[b.first].event], a, z);
      ++drawn.spans;
      if (inside) drawn.hovered = &lane[b.first], drawn.hovered_fold = 1;
    }
    draw->PopClipRect();
  }
  return drawn;
}

void TimelinePanel::Draw(FrameContext& frame) {
  const core::SessionSnapshot& run = frame.run;
  // A run with no step yet while a lesson asks: a sentence, and the room left to the step's text.
  if (run.steps.empty() && shows_the_lesson_asks(frame, "Each device's timeline of the step"))
    return;
  // A picture sized to its room, from before its first data on: it keeps the room the layout
  // gives it (gui/drawing/content_height.h).
  fills_room();
  if (frame.session == nullptr) {
    text_wrapped("No run.");
    return;
  }
  follow(run);
  if (const std::string line = step_time_line(run); !line.empty()) {
    text_wrapped_unformatted(line);
  }
  draw_packs_line(frame);
  draw_toolbar();
  if (!zoomed_) {
    // Until the wheel chooses, the last few steps: wide enough to read each phase (and each
    // pack's all-reduce), not hundreds of steps folded grey.
    if (const auto ms = core::mean_step_ms(run.steps)) {
      follow_width_ = std::clamp(kStepsInView * *ms * 1e-3, 1e-3, 0.5);
    }
  }
  if (follow_latest_) {
    t1_ = std::max(latest_, follow_width_);
    t0_ = t1_ - follow_width_;
  }
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const LaneArea area = plan_area(shown_.size());
  // Its lanes at their tallest take no more room than this: a window taller leaves the rest empty
  // (two devices' lanes under a projector's whole picture share), so the layout may give it to the
  // lesson's text.
  fills_room_up_to(content_height() + area.axis_height +
                   static_cast<float>(std::max<std::size_t>(shown_.size(), 1)) *
                       (kTallestLaneLines * area.line + kLaneGap));
  draw_time_axis(draw, area, t0_, t1_);
  const LanesDrawn drawn = draw_lanes(draw, run, area);
  const ImVec2 avail = area.avail;
  ImGui::InvisibleButton("timeline", avail.x > 0 && avail.y > 0 ? avail : ImVec2(1, 1));
  handle_mouse(area.left, area.width);
  if (drawn.hovered != nullptr && ImGui::IsItemHovered()) {
    draw_tooltip(run, *drawn.hovered, drawn.hovered_fold);
  }
  frame.report.drew(name(), "lanes", static_cast<double>(shown_.size()));
  frame.report.drew(name(), "communication lanes",
                    static_cast<double>(shown_.size() - lanes_.size() / 2));
  frame.report.drew(name(), "spans", static_cast<double>(drawn.spans));
  frame.report.drew(name(), "folds", static_cast<double>(drawn.folds));
}

}  // namespace mirrorlab::gui
