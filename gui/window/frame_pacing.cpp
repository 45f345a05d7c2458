#include "gui/window/frame_pacing.h"

#include <algorithm>
#include <thread>

namespace mirrorlab::gui {

FramePacer::FramePacer(double max_fps, double refresh_hz)
    : max_fps_(max_fps),
      refresh_hz_(refresh_hz),
      period_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(max_fps > 0 ? 1.0 / max_fps : 0.0))) {}

void FramePacer::take_events(PlatformWindow& window, double now) const {
  // Building the panels 60 times a second costs a core a few percent even when nothing is
  // drawn: at rest the loop waits.
  if (refresh_hz_ <= 0 || now < lively_until_) {
    window.poll_events();
  } else {
    // At least 4 times a second, so a finished step or measurement shows even when idle.
    window.wait_events(std::min(1.0 / refresh_hz_, 0.25));
  }
}

void FramePacer::wait_for_next_frame() {
  // Absolute deadlines, so the average is the cap even though each sleep overshoots a little;
  // a frame that ran late does not make the next ones hurry.
  if (max_fps_ <= 0) return;
  deadline_ += period_;
  const auto now = Clock::now();
  if (deadline_ < now) deadline_ = now;
  std::this_thread::sleep_until(deadline_);
}

}  // namespace mirrorlab::gui
