// Timeline: one lane per device, a span for every phase of every step, as Tracy draws zones; under
// a device whose packs were all-reduced while backward ran, a second lane for its communication.
// Mouse wheel zooms around the pointer, dragging pans, hovering shows the span's details.
// Spans narrower than ~3 pixels are folded into one grey block with a count, so a run of
// thousands of steps draws as fast as one of ten.
#pragma once

#include <vector>

#include "core/strategy/events/run_events.h"
#include "gui/panels/panel.h"
#include "imgui.h"

namespace mirrorlab::gui {

struct TimelineSpan {
  double begin = 0, end = 0;  // seconds since the run's origin
  std::size_t event = 0;      // index into the snapshot's events
};

// Where a lane's spans go on screen between two x positions: either a span of its own, or a
// fold of `count` spans too narrow to draw one by one.
struct TimelineBlock {
  float x0 = 0, x1 = 0;
  std::size_t first = 0;  // index into the lane's spans
  std::size_t count = 0;  // 1: a span; more: a fold
};

// Lays out `spans` (sorted by begin) between t0 and t1 seconds over `width` pixels, folding
// neighbours narrower than `min_pixels`. Pure, so it is tested without a window.
std::vector<TimelineBlock> layout_lane(const std::vector<TimelineSpan>& spans, double t0, double t1,
                                       float width, float min_pixels = 3.0f);

struct LaneArea;    // timeline_panel.cpp
struct LanesDrawn;  // timeline_panel.cpp

class TimelinePanel : public Panel {
 public:
  const char* name() const override { return "Timeline"; }
  void Draw(FrameContext& frame) override;

 private:
  void follow(const core::SessionSnapshot& run);
  void handle_mouse(float left, float width);
  void draw_toolbar();  // Follow, Whole run, the phases' colours
  // The packs of a step, and the share of their all-reduces that ran beside backward.
  void draw_packs_line(FrameContext& frame);
  LanesDrawn draw_lanes(ImDrawList* draw, const core::SessionSnapshot& run,
                        const LaneArea& area) const;

  const void* session_ = nullptr;
  std::size_t events_seen_ = 0;
  // Per device two lanes: 2d its compute, 2d + 1 its communication (drawn once it has a span).
  std::vector<std::vector<TimelineSpan>> lanes_;
  std::vector<std::size_t> shown_;  // the lanes drawn, top to bottom
  double latest_ = 0;               // end of the last span
  double t0_ = 0, t1_ = 1;          // the visible window, seconds
  bool follow_latest_ = true;       // keep the newest spans in view
  double follow_width_ = 0.5;       // seconds shown while following
  core::HiddenAllReduce hidden_;    // of the events so far (draw_packs_line)
  std::size_t hidden_counted_ = 0;
  double hidden_at_ = -1;
  bool zoomed_ = false;  // the wheel chose follow_width_; until then kStepsInView steps
  static constexpr double kStepsInView = 4;
};

}  // namespace mirrorlab::gui
