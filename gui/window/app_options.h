// The options of the GUI window (`mirrorlab gui` flags beyond those of `train`). A plain struct
// with no GUI dependency, so the command line compiles whether or not the GUI is built.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mirrorlab::gui {

struct AppOptions {
  int width = 1600, height = 1000;  // window size in screen pixels
  // The size above at most the screen's work area (where neither was asked for: a laptop's
  // 1366x768 screen or a 1280x720 projector gets a window it can show whole).
  bool fit_screen = false;
  float font_scale = 1.0f;    // 1.5 or more for a projector
  bool present = false;       // the presenter layout (ViewSettings::present)
  bool tall_caption = false;  // its lesson strip tall (ViewSettings::tall_caption)
  double max_fps = 60;        // frame cap, so drawing leaves the cores to training (0: none)
  // While training runs freely, the run's results are copied for drawing at most this often;
  // the frames in between show the same picture and are not drawn again (0: every frame).
  double refresh_hz = 15;
  bool run = false;         // start training at once (else paused)
  std::int64_t steps = 0;   // scripted: run this many global steps first
  int phases = 0;           // scripted: then walk this many phase boundaries into a step
  bool compare = false;     // scripted: run the Compare panel's measurement first
  std::string panel;        // show only this panel (by name), filling the window
  std::string lesson_file;  // play this lesson file in the Lesson panel (empty: no lesson)
  int lesson_step = 1;      // from this step (1-based)
  // Scripted: play every step from lesson_step to the lesson's last in turn, the screenshot and
  // the report written once a step, "{step}" in their paths replaced by its number.
  bool every_step = false;
  // Scripted, with a lesson: each step as the class first sees it, its questions waiting and
  // nothing run, no answers (a worksheet's pictures).
  bool unanswered = false;
  // Scripted: press these keys in turn (gui/window/pressed_keys.h: "space,pgdn"), each once the
  // work the last one started is done, then render `frames` frames.
  std::string press;
  // The timing model's machine for the Compare and All-reduce panels (a preset's id or
  // "this-machine"; empty: the default), and the Compare panel opens on it.
  std::string topology;
  // The Compare panel opens on that tab's training step (the speed-up by devices) rather than one
  // all-reduce by size.
  bool speedup = false;
  // Play this modelled all-reduce ("nccl-ring", ...) in the All-reduce panel, of
  // `modelled_bytes` per GPU, shown after `modelled_step` of its steps.
  std::string modelled_allreduce;
  std::uint64_t modelled_bytes = std::uint64_t{64} << 20;
  int modelled_step = 0;
  // Scripted run: once the steps and the measurement are done, render `frames` frames, write
  // the picture to `screenshot` (if set: .png or .jpg) and the report (if set), and return.
  std::string screenshot;
  int frames = 0;
  std::string report;             // JSON of what each panel drew, frame rate, images/s
  double measure_seconds = 0;     // scripted: train (running) this long while drawing, then stop
  double quit_after_seconds = 0;  // close the window after this long, whatever the run does
  double script_timeout_seconds = 600;
  // Asked every frame: true closes the window as if the user had (Ctrl-C in the terminal).
  std::function<bool()> close_requested;
  // Told once, when the window is on the screen, before its first frame.
  std::function<void()> window_opened;
  // Asked every frame: a path to write the next frame to (a PNG, or .jpg) ("": none), as F12 writes
  // a numbered one; then told the path and why it was not written ("": it was). A window watched
  // from Python takes its pictures so, and says what became of them itself: with these set, the
  // window prints nothing of its pictures (a notebook would not see it).
  std::function<std::string()> screenshot_wanted;
  std::function<void(const std::string& path, const std::string& problem)> screenshot_done;
};

}  // namespace mirrorlab::gui
