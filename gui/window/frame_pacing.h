// When the window's next frame starts: at most max_fps a second, paced to absolute deadlines;
// at rest (no pointer, key or widget in use for half a second), waiting for input or the next
// refresh of the run's results instead of spinning at the cap.
#pragma once

#include <chrono>

#include "gui/window/platform_window.h"

namespace mirrorlab::gui {

class FramePacer {
 public:
  // `max_fps` <= 0: no cap; `refresh_hz` <= 0: never at rest.
  FramePacer(double max_fps, double refresh_hz);
  // Someone is using the window: frames follow each other at the cap until `until` (seconds).
  void keep_lively(double until) { lively_until_ = until; }
  // Before a frame started at `now`: the window's events, waited for when at rest.
  void take_events(PlatformWindow& window, double now) const;
  // After a frame: sleeps until the next one's deadline.
  void wait_for_next_frame();

 private:
  using Clock = std::chrono::steady_clock;
  double max_fps_;
  double refresh_hz_;
  Clock::duration period_;
  Clock::time_point deadline_ = Clock::now();
  double lively_until_ = 0;
};

}  // namespace mirrorlab::gui
