#include "gui/window/scripted_run.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "gui/window/pressed_keys.h"

namespace mirrorlab::gui {
namespace {

double median(std::vector<double> values) {  // of a non-empty list
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                   values.end());
  return values[values.size() / 2];
}

}  // namespace

ScriptedRun::ScriptedRun(const AppOptions& options)
    : options_(options),
      active_(!options.screenshot.empty() || !options.report.empty() || options.frames > 0 ||
              options.measure_seconds > 0 || !options.press.empty()),
      phases_left_(options.phases),
      keys_(options.press.empty() ? std::vector<int>{} : pressed_keys(options.press)) {}

void ScriptedRun::start(core::TrainingSession* session, ComparePanel* compare) const {
  if (session == nullptr) return;
  for (std::int64_t i = 0; i < options_.steps; ++i) session->step();
  if (options_.compare && compare != nullptr) compare->start(*session);
  if (options_.run || options_.measure_seconds > 0) session->run();
}

ScriptStep ScriptedRun::after_frame(double now, const core::SessionSnapshot& run,
                                    core::TrainingSession* session, FrameStats& stats,
                                    GuiReport& report, bool lesson_busy) {
  if (now - step_started_ > options_.script_timeout_seconds) {
    std::fprintf(stderr, "mirrorlab gui: the scripted run did not finish in %.0f s%s\n",
                 options_.script_timeout_seconds, step_started_ > 0 ? " (a lesson's step)" : "");
    timed_out_ = true;
    return ScriptStep::kDone;
  }
  if (options_.measure_seconds > 0 && session != nullptr) {
    if (measure_start_ < 0) {
      if (run.steps_done < 3) return ScriptStep::kGoOn;  // past the first, slower steps
      measure_start_ = now;
      measure_steps0_ = run.steps_done;
      stats.restart();
    }
    if (now - measure_start_ < options_.measure_seconds) return ScriptStep::kGoOn;
    if (frames_after_work_ == 0) {
      report.note("measure_seconds", now - measure_start_);
      report.note("measure_frames", static_cast<double>(stats.frame_seconds.size()));
      report.note("measure_steps", static_cast<double>(run.steps_done - measure_steps0_));
      measure_ips_ =
          run.images_per_second(static_cast<std::size_t>(run.steps_done - measure_steps0_));
      session->pause();
    }
  }
  const bool live =
      run.state == core::SessionState::kPaused || run.state == core::SessionState::kRunning;
  bool work_pending =
      session != nullptr && (run.busy_with_task || (live && run.steps_done < options_.steps));
  if (!work_pending && session != nullptr && live && phases_left_ > 0) {
    // Walk into the next step one boundary at a time: ask for the next phase once the
    // replicas are held somewhere new (or, the first time, at once).
    const std::string held = run.held_at ? run.held_at->label() : "";
    if (!asked_for_phase_ || (!held.empty() && held != last_held_)) {
      if (asked_for_phase_) --phases_left_, last_held_ = held;
      if (phases_left_ > 0) session->next_phase(), asked_for_phase_ = true;
    }
    work_pending = phases_left_ > 0;
  }
  if (work_pending || lesson_busy) return ScriptStep::kGoOn;
  // --press: the next key once what the last one started is done.
  if (key_down_) {
    key_down_ = false;  // up in the next frame
    return ScriptStep::kGoOn;
  }
  if (keys_pressed_ < keys_.size()) {
    key_due_ = keys_[keys_pressed_++];
    key_down_ = true;
    return ScriptStep::kGoOn;
  }
  if (++frames_after_work_ < std::max(options_.frames, 2)) return ScriptStep::kGoOn;
  return options_.screenshot.empty() ? ScriptStep::kDone : ScriptStep::kScreenshotThenDone;
}

void ScriptedRun::next_lesson_step(double now) {
  frames_after_work_ = 0;
  step_started_ = now;
}

std::string path_for_step(const std::string& pattern, int step) {
  std::string path = pattern;
  const std::string key = "{step}", number = std::to_string(step);
  for (std::size_t at = path.find(key); at != std::string::npos;
       at = path.find(key, at + number.size())) {
    path.replace(at, key.size(), number);
  }
  return path;
}

int ScriptedRun::finish(const core::SessionSnapshot& run, const std::string& setup_error,
                        bool screenshot_failed) const {
  if (!active_) return 0;
  int status = timed_out_ ? 1 : 0;
  const bool trains = options_.steps > 0 || options_.phases > 0 || options_.measure_seconds > 0;
  if (!setup_error.empty() && (trains || options_.compare)) {
    std::fprintf(stderr, "mirrorlab gui: the scripted run could not train: %s\n",
                 setup_error.c_str());
    status = 1;
  }
  if (run.state == core::SessionState::kFailed && trains) {
    // The picture shows the failure; the status says the script did not do what it asked.
    std::fprintf(stderr, "mirrorlab gui: the scripted run stopped after step %lld: %s\n",
                 static_cast<long long>(run.steps_done), run.error.c_str());
    status = 1;
  }
  if (screenshot_failed) status = 1;
  return status;
}

bool write_report(GuiReport& report, const FrameStats& stats, const core::SessionSnapshot& run,
                  bool setup_failed, double measured_images_per_second, const std::string& path) {
  if (!stats.frame_seconds.empty()) {
    double total = 0;
    for (double s : stats.frame_seconds) total += s;
    // Updates: frames built (input handled, panels laid out); frames: those drawn and shown.
    const auto updates = static_cast<double>(stats.frame_seconds.size());
    report.note("updates_per_second", updates / total);
    report.note("frames_per_second", static_cast<double>(stats.frames_drawn) / total);
    report.note("frames_drawn", static_cast<double>(stats.frames_drawn));
    report.note("updates", updates);
    report.note("median_frame_ms", 1e3 * median(stats.frame_seconds));
  }
  // A drawn frame from snapshot to shown: what one costs.
  if (!stats.draw_seconds.empty()) report.note("median_draw_ms", 1e3 * median(stats.draw_seconds));
  report.note("steps_done", static_cast<double>(run.steps_done));
  report.note("images_per_second", measured_images_per_second > 0
                                       ? measured_images_per_second
                                       : run.images_per_second(1u << 30));
  report.note("session_failed", run.state == core::SessionState::kFailed ? 1 : 0);
  report.note("setup_failed", setup_failed ? 1 : 0);
  report.note("draw_calls", stats.draw_calls);
  report.note("vertices", stats.vertices);
  report.note("held_within_step", run.held_at ? 1 : 0);
  if (!run.workers.empty()) {
    report.note("workers", static_cast<double>(run.workers.size()));
    report.note("workers_found_in_sync", static_cast<double>(run.workers_found_in_sync));
  }
  if (path.empty()) return true;
  try {
    report.write(path);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mirrorlab gui: %s\n", e.what());
    return false;
  }
}

}  // namespace mirrorlab::gui
