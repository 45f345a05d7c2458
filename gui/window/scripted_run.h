// The window's scripted runs, for tests, README pictures and measurements (--steps, --phases,
// --compare, --press, --screenshot, --frames, --report, --measure-seconds): what to ask of the
// session before the first frame and after each one, and when the script is done. The interactive
// frame loop (gui/window/app_window.cpp) knows nothing of them but to ask after each frame.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/session/training_session.h"
#include "gui/model/gui_report.h"
#include "gui/panels/compare/compare_panel.h"
#include "gui/window/app_options.h"

namespace mirrorlab::gui {

// What the frame loop measured, for the report.
struct FrameStats {
  std::vector<double> frame_seconds;  // wall time between frames (each frame built)
  // Frames rasterized and shown; the others were identical to the picture on screen (see
  // gui/window/frame_fingerprint.h). Counted from the start, or from the start of
  // --measure-seconds.
  std::int64_t frames_drawn = 0;
  std::vector<double> draw_seconds;  // wall time of each drawn frame, snapshot to swap
  int draw_calls = 0, vertices = 0;  // of the last drawn frame
  double previous_frame = -1;        // when the last frame started

  void frame_started(double now) {
    if (previous_frame >= 0) frame_seconds.push_back(now - previous_frame);
    previous_frame = now;
  }
  void restart() {  // counts from now on; the last frame's draw calls and vertices stay
    frame_seconds.clear();
    frames_drawn = 0;
    draw_seconds.clear();
    previous_frame = -1;
  }
};

enum class ScriptStep {
  kGoOn,                // draw another frame
  kDone,                // close the window
  kScreenshotThenDone,  // draw one more frame, write it to the screenshot file, close
};

class ScriptedRun {
 public:
  explicit ScriptedRun(const AppOptions& options);

  // Whether the options ask for a script; an interactive window has none.
  bool active() const { return active_; }

  // Before the first frame, for every window: --steps, --compare and --run.
  void start(core::TrainingSession* session, ComparePanel* compare) const;

  // After each frame, `now` seconds after the window opened: walks the phases, takes the
  // measurement, presses the next key, and says what next. `lesson_busy`: a lesson's step is
  // still being played, or its layout still settling (columns, strip): no key, no picture yet.
  ScriptStep after_frame(double now, const core::SessionSnapshot& run,
                         core::TrainingSession* session, FrameStats& stats, GuiReport& report,
                         bool lesson_busy = false);

  // The exit status once the loop ended: 1 when the script timed out, could not train, stopped
  // on a failed step or could not write its screenshot (each said on stderr), else 0.
  int finish(const core::SessionSnapshot& run, const std::string& setup_error,
             bool screenshot_failed) const;

  bool timed_out() const { return timed_out_; }

  // Training images/s while --measure-seconds ran (0: not measured).
  double measured_images_per_second() const { return measure_ips_; }

  // --press: the key to hold down in the coming frame, once (-1: none). A key is down for one
  // frame and up for at least one before the next, as a press is.
  int take_key() { return std::exchange(key_due_, -1); }

  // --every-step: the lesson went on to its next step at `now`; its frames are counted (and its
  // time limit runs) from there.
  void next_lesson_step(double now);

 private:
  AppOptions options_;
  bool active_;
  bool timed_out_ = false;
  double measure_start_ = -1;
  std::int64_t measure_steps0_ = 0;
  double measure_ips_ = 0;
  int frames_after_work_ = 0;
  double step_started_ = 0;  // when the lesson's step began (--every-step), else 0
  int phases_left_;          // --phases: boundaries still to walk
  bool asked_for_phase_ = false;
  std::string last_held_;
  std::vector<int> keys_;  // --press
  std::size_t keys_pressed_ = 0;
  int key_due_ = -1;
  bool key_down_ = false;  // the last key is down in the frame just drawn
};

// A scripted file's path for a lesson's step: each "{step}" in `pattern` replaced by `step`.
std::string path_for_step(const std::string& pattern, int step);

// Notes the frame rates, the run's state and what the last frame drew in `report`, and writes
// it to `path` ("": nowhere). False, said on stderr, when it could not be written.
bool write_report(GuiReport& report, const FrameStats& stats, const core::SessionSnapshot& run,
                  bool setup_failed, double measured_images_per_second, const std::string& path);

}  // namespace mirrorlab::gui
