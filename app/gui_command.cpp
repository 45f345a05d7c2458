#include "app/gui_command.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "app/flags/device_flags.h"
#include "app/flags/flags.h"
#include "app/output/interrupt.h"
#include "app/output/output_files.h"
#include "app/train/run_launch.h"
#include "core/nn/cpu/kernels_cpu.h"
#include "core/session/worker_followers.h"

#ifdef MIRRORLAB_HAVE_GUI
#include "gui/model/modelled_all_reduce.h"
#include "gui/window/app_window.h"
#include "gui/window/scripted_run.h"
#endif
// The key names alone (no GUI needed): the help says them in any build.
#include "gui/window/pressed_keys.h"
#ifdef MIRRORLAB_HAVE_LESSONS
#include "lessons/player/lesson.h"
#endif

namespace mirrorlab::app {
namespace {

// The all-reduces the timing model can play in the All-reduce panel (none without a GUI).
std::vector<std::string> modelled_choices() {
#ifdef MIRRORLAB_HAVE_GUI
  return gui::modelled_algorithm_ids();
#else
  return {};
#endif
}

}  // namespace

CLI::App* add_gui_command(CLI::App& app, GuiOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "gui", "Watch and steer mirrored training in a window (same flags as train)");
  add_training_flags(cmd, o.train);
  add_real_flag(cmd, "--font-scale", o.app.font_scale, 0.5, 4.0,
                "Text size: 1.5 or 2 for a projector");
  cmd->add_flag("--present", o.app.present,
                "Presenter layout, for a projector: no Controls column (Space runs, N steps), a "
                "lesson as a caption strip across the bottom, the step's panel filling the rest "
                "(F5 switches in the window). In a lesson, Space or Page Down (a clicker) goes "
                "on: a page more of the step, its run, the next step; Page Up goes back");
  cmd->add_flag("--tall-lesson-text", o.app.tall_caption,
                "The presenter layout with the lesson's strip taking 55% of the window rather "
                "than 25%: a step's text and questions read whole at a large font (T switches in "
                "the window)");
  add_whole_number_flag(cmd, "--width", o.app.width, 640, 8192,
                        "Window width in pixels (default: 1600, or the screen's width where less)");
  add_whole_number_flag(
      cmd, "--height", o.app.height, 400, 8192,
      "Window height in pixels (default: 1000, or the screen's height where less)");
  add_real_flag(cmd, "--max-fps", o.app.max_fps, 0.0, 1000.0,
                "Frame cap, so drawing leaves the cores to training (0: none)");
  add_real_flag(cmd, "--refresh-hz", o.app.refresh_hz, 0.0, 1000.0,
                "While training runs, show its new results this many times a second; the "
                "frames between are not redrawn, which leaves the cores to training (0: every "
                "frame). Paused or inside a step, every frame shows the latest");
  cmd->add_flag("--run", o.app.run, "Start training at once (else it waits for Run or One step)");
  add_whole_number_flag(cmd, "--steps", o.app.steps, 0, std::int64_t{1} << 40,
                        "Run this many global steps first, then pause");
  add_whole_number_flag(cmd, "--phases", o.app.phases, 0, 1000,
                        "Then go this many phases into the next step and hold it there (split, "
                        "forward, backward, each all-reduce step, update)");
  cmd->add_flag("--compare", o.app.compare,
                "Measure the all-reduce algorithms (the Compare panel) at the start");
  add_text_flag(cmd, "--panel", o.app.panel,
                "Show only this panel, filling the window: Devices, \"Batch split\", Gradients, "
                "All-reduce, Timeline, Training or Compare")
      ->type_name("NAME");
  add_text_flag(cmd, "--screenshot", o.app.screenshot,
                "Scripted run: once --steps and --compare are done, render --frames frames, "
                "write this picture (.png, or .jpg for a JPEG) and exit")
      ->type_name("FILE");
  add_whole_number_flag(cmd, "--frames", o.app.frames, 1, 100000,
                        "Frames to render before the screenshot")
      ->default_str("");
  add_text_flag(cmd, "--report", o.app.report,
                "Write what each panel drew, the frame rate and images/s as JSON, then exit")
      ->type_name("FILE");
  add_real_flag(cmd, "--measure-seconds", o.app.measure_seconds, 0.0, 3600.0,
                "Scripted run: train while drawing for this long, report frames/s and images/s");
  cmd->add_flag("--check-display", o.check_display,
                "Only check that a window can be opened here: exit 0 if so, else 2 saying why");
  add_text_flag(cmd, "--lesson", o.lesson,
                "Play this lesson in the Lesson panel: its number or id ('mirrorlab lesson "
                "list') or a lesson file. Each step sets its own run up, so the run's flags are "
                "ignored")
      ->type_name("N|ID|FILE");
  add_whole_number_flag(cmd, "--lesson-step", o.app.lesson_step, 1, 1000,
                        "Start the lesson at this step (1 is the first)");
  cmd->add_flag("--every-step", o.app.every_step,
                "Scripted, with --lesson: play each step from --lesson-step to the last in turn, "
                "as Next does, writing --screenshot and --report once a step: {step} in their "
                "paths is the step's number (shots/step-{step}.png)");
  cmd->add_flag("--unanswered", o.app.unanswered,
                "Scripted, with --lesson: show each step as the class first sees it, the "
                "steps before it run, its questions waiting for predictions, no answers (a "
                "worksheet's pictures; with --every-step, every step's). A step that asks "
                "nothing runs as in class");
  add_text_flag(cmd, "--press", o.app.press,
                std::string("Scripted: press these keys in turn as a presenter would (") +
                    gui::kPressableKeys +
                    ", separated by commas), each after what the key before started has "
                    "finished, then write --screenshot or --report. With --unanswered a "
                    "lesson's step waits for them as in class")
      ->type_name("KEYS");
  add_text_flag(cmd, "--lessons", o.lessons_folder,
                "Folder of lesson files (default: mirrorlab's lessons/, or $MIRRORLAB_LESSONS)")
      ->type_name("DIR");
  add_text_flag(cmd, "--topology", o.app.topology,
                "The timing model's machine in the Compare panel (opened on its 'Predicted on a "
                "machine' tab) and the All-reduce panel's model: a preset (dgx-h100, "
                "dgx-h100-2-nodes, nvlink-pairs-4, pcie-2, laptop-4-logical), this-machine "
                "(once 'mirrorlab compare --fit' saved it) or a topology file")
      ->type_name("ID|FILE");
  cmd->add_flag("--speedup", o.app.speedup,
                "Open the Compare panel on the training step of the run's model on --topology's "
                "machine (default dgx-h100): its time on 1 to all of its GPUs, the speed-up and "
                "where another GPU stops paying for itself");
  add_choice_flag(cmd, "--model-allreduce", o.app.modelled_allreduce, modelled_choices(),
                  "Play this all-reduce of the timing model step by step in the All-reduce "
                  "panel, on --topology's machine (default dgx-h100): NCCL's (where it can run; "
                  "NVLS only with NVSwitch) or mirrorlab's");
  add_bytes_flag(cmd, "--model-size", o.app.modelled_bytes, 4, std::uint64_t{1} << 40, 4,
                 "Bytes per GPU of --model-allreduce (4K, 64M, 1G)");
  add_whole_number_flag(cmd, "--model-step", o.app.modelled_step, 0, 100000,
                        "Show --model-allreduce after this many of its steps (0: before it)");
  add_real_flag(cmd, "--quit-after", o.app.quit_after_seconds, 0.0, 86400.0,
                "Close the window after this many seconds, even mid-run (tests, demos)");
  return cmd;
}

namespace {

#ifdef MIRRORLAB_HAVE_GUI
// "" when --every-step (or a "{step}" in a path) and --unanswered are given as they can be used,
// else what to do.
std::string every_step_problem(const GuiOptions& o) {
  const auto has_step = [](const std::string& path) {
    return path.find("{step}") != std::string::npos;
  };
  if (o.app.unanswered && o.lesson.empty()) {
    return "--unanswered shows a lesson's steps before they run: give --lesson too";
  }
  if (o.app.unanswered && o.app.screenshot.empty() && o.app.report.empty()) {
    return "--unanswered is for pictures of a lesson's steps: give --screenshot (or --report); "
           "in the window itself every step waits for predictions anyway";
  }
  if (o.app.unanswered && (o.app.run || o.app.steps > 0 || o.app.phases > 0 ||
                           o.app.measure_seconds > 0 || o.app.compare)) {
    return "--unanswered shows each step before it runs: --run, --steps, --phases, --compare "
           "and --measure-seconds would run it, so leave them out";
  }
  if (!o.app.press.empty()) {
    try {
      gui::pressed_keys(o.app.press);
    } catch (const std::invalid_argument& e) {
      return std::string("--press ") + e.what();
    }
  }
  if (!o.app.press.empty() && o.app.screenshot.empty() && o.app.report.empty()) {
    return "--press is for pictures of what the keys do: give --screenshot (or --report); in the "
           "window itself, press them";
  }
  if (!o.app.press.empty() && o.app.every_step) {
    return "--press goes through one lesson from --lesson-step as a presenter would, and "
           "--every-step through each step on its own: give one of them";
  }
  if (!o.app.every_step) {
    for (const auto& [flag, path] :
         {std::pair{"--screenshot", &o.app.screenshot}, std::pair{"--report", &o.app.report}}) {
      if (has_step(*path)) {
        return std::string(flag) + " " + *path +
               ": {step} is filled in by --every-step only; add --every-step, or name the file";
      }
    }
    return "";
  }
  if (o.lesson.empty()) return "--every-step plays a lesson's steps: give --lesson too";
  if (o.app.run || o.app.steps > 0 || o.app.phases > 0 || o.app.measure_seconds > 0 ||
      o.app.compare) {
    return "--every-step plays each step as the lesson sets it up: --run, --steps, --phases, "
           "--compare and --measure-seconds script one run, so leave them out";
  }
  if (o.app.screenshot.empty() && o.app.report.empty()) {
    return "--every-step writes files once a step: give --screenshot or --report, with {step} "
           "in the path (shots/step-{step}.png)";
  }
  for (const auto& [flag, path] :
       {std::pair{"--screenshot", &o.app.screenshot}, std::pair{"--report", &o.app.report}}) {
    if (!path->empty() && !has_step(*path)) {
      return std::string("--every-step writes ") + flag + " once a step: put {step} in its path (" +
             (std::string(flag) == "--report" ? "report-{step}.json" : "step-{step}.png") +
             "), or each step's file would replace the one before";
    }
  }
  return "";
}
#endif

// "" when the window's flags can run here, else what is wrong: the training flags, a GUI in this
// build, the window's own flags and files (worker 0's alone: `window`), the lesson (resolved into
// *app). *gpus: the devices per worker.
std::string check_gui_options(const GuiOptions& o, bool window, int* gpus, gui::AppOptions* app) {
  if (std::string problem = check_train_options(o.train, gpus); !problem.empty()) {
    return problem + "\nRun 'mirrorlab gui --help' for the flags.";
  }
#ifndef MIRRORLAB_HAVE_GUI
  (void)window;
  (void)app;
  return "this build has no GUI (Dear ImGui, GLFW or OpenGL were not found when it was "
         "configured). Install libimgui-dev libglfw3-dev libgl-dev libstb-dev (scripts/setup "
         "does) and rebuild; 'mirrorlab train' trains without a window.";
#else
  // The window writes its files itself (a screenshot can be taken any time): checked here only;
  // --every-step's once the lesson's steps are known.
  OutputFiles outputs;
  const bool each = o.app.every_step;
  for (const std::string& problem :
       {window ? gui::check_app_options(o.app) : "", window ? every_step_problem(o) : "",
        window && !each ? outputs.add("--screenshot", o.app.screenshot, false) : "",
        window && !each ? outputs.add("--report", o.app.report, false) : ""}) {
    if (!problem.empty()) return problem;
  }
  if (o.lesson.empty()) return "";
#ifdef MIRRORLAB_HAVE_LESSONS
  // The id resolved and the file read here, so a typo is said before the data set loads.
  try {
    const lessons::Lesson lesson = lessons::find_lesson(o.lesson, o.lessons_folder);
    app->lesson_file = lesson.path;
    if (std::string problem = lessons::why_not_playable(lesson, o.app.lesson_step);
        !problem.empty() || !window || !each) {
      return problem;
    }
    for (int step = o.app.lesson_step; step <= static_cast<int>(lesson.steps.size()); ++step) {
      const std::string of_step = " (step " + std::to_string(step) + ")";
      for (const std::string& problem :
           {outputs.add("--screenshot" + of_step, gui::path_for_step(o.app.screenshot, step),
                        false),
            outputs.add("--report" + of_step, gui::path_for_step(o.app.report, step), false)}) {
        if (!problem.empty()) return problem;
      }
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("--lesson: ") + e.what();
  }
#else
  return "--lesson: this build has no lessons (toml++ and md4c were not found when it was "
         "configured): install libtomlplusplus-dev libmd4c-dev (scripts/setup does) and rebuild";
#endif
#endif
}

// What the window cannot do as one of several workers (mpirun), as a refusal; "".
std::string not_for_gui_workers(const GuiOptions& o) {
  if (!o.lesson.empty()) {
    return "--lesson plays its runs in one process (a lesson of several workers runs them as "
           "threads): run it without mpirun";
  }
  if (o.check_display)
    return "--check-display checks this process's display: run it without mpirun";
  if (!o.train.faults.empty()) {
    return "the fault flags are not built for several workers yet (each worker would act on its "
           "own): run the window without mpirun";
  }
  return "";
}

#ifdef MIRRORLAB_HAVE_GUI
// The session the window runs (and the other workers follow): the flags' settings, with the
// devices made as `train` makes them (CPU-backed, or CUDA by --backend) with the count and
// limits the window's Settings give.
core::SessionConfig session_config(const GuiOptions& o, int gpus, const DevicePlan& plan,
                                   int workers) {
  core::SessionConfig config;
  config.settings = o.train.settings;
  config.settings.devices.gpus = gpus;  // the count the flags ask for (app/flags/device_flags.h)
  config.settings.workers = workers;
  config.make_devices = [plan](vgpu::DeviceRegistry& registry,
                               const std::vector<vgpu::LogicalDeviceConfiguration>& configs) {
    DevicePlan changed = plan;
    changed.devices = configs;
    make_devices(changed, registry);
  };
  config.faults = o.train.faults;  // the window's Faults controls change them while it runs
  return config;
}

// A worker other than 0 under mpirun: no window here; it takes each step worker 0's window
// takes, until it closes.
int follow_the_window(RunLaunch& launch, std::shared_ptr<const core::FashionMnist> data,
                      const core::SessionConfig& config) {
  const std::string failed = core::follow_worker_0(*launch.workers(), std::move(data), config);
  if (!failed.empty()) {
    // Worker 0 may wait inside this step's exchanges: this worker leaves without another,
    // and worker 0's watch sees it gone and stops, naming it.
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", failed.c_str());
    return 1;
  }
  launch.finish();
  return 0;
}

// The window, until it closes; with workers, the others follow its session.
int run_window(RunLaunch& launch, std::shared_ptr<const core::FashionMnist> data,
               core::SessionConfig config, gui::AppOptions app) {
  std::unique_ptr<core::WorkerFollowers> followers;
  if (launch.workers()) {
    followers = std::make_unique<core::WorkerFollowers>(*launch.workers());
    config.other_workers = followers->maker();
  }
  // The window has closed (or never opened): the followers return, then every worker meets
  // once more and leaves. Followers lost in a failed step cannot be told: worker 0 leaves
  // alone, and they see it gone.
  const auto release_followers = [&](int status) {
    if (!followers) return status;
    if (const std::string lost = followers->lost(); !lost.empty()) {
      std::fprintf(stderr, "mirrorlab gui: %s.\n", lost.c_str());
      return status == 0 ? 1 : status;
    }
    followers->quit();
    launch.finish();
    return status;
  };
  app.close_requested = [] { return interrupt_signal() != 0; };
  try {
    const int status = gui::run_app(std::move(data), config, app);
    if (const int signal = interrupt_signal(); signal != 0) {
      std::printf("Window closed by %s.\n", interrupt_name(signal));
      return release_followers(interrupt_exit_status(signal));
    }
    return release_followers(status);
  } catch (const gui::NoDisplayError& e) {
    std::fprintf(stderr, "mirrorlab gui: %s\n", e.what());
    return release_followers(2);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mirrorlab gui: %s\n", e.what());
    return release_followers(2);
  }
}
#endif

}  // namespace

int run_gui(const GuiOptions& o) {
  // Alone, or under mpirun: the window on worker 0, the other workers following its run
  // (core/session/worker_followers.h). Worker 0 says what is wrong, for every worker.
  RunLaunch launch("gui");
  // No timeout on a collective: a window may hold a step at a phase for as long as a class
  // looks at it, with the other workers inside that step's all-reduce. A worker on this host
  // that dies is still seen at once (virtualgpu/workers/worker_watch.h).
  if (!launch.start(0, 1e9)) return 2;
  vgpu::WorkerGroup* workers = launch.workers();
  const bool chief = launch.chief();
  int gpus = 0;
  gui::AppOptions app = o.app;
  app.fit_screen = !o.train.given.contains("--width") && !o.train.given.contains("--height");
  std::string problem = check_gui_options(o, chief, &gpus, &app);
  if (workers && problem.empty()) problem = not_for_gui_workers(o);
  if (!launch.agree(problem, o.train)) return 2;
#ifdef MIRRORLAB_HAVE_GUI
  if (o.check_display) {
    std::string why;
    if (gui::can_open_window(&why)) return 0;
    std::fprintf(stderr, "mirrorlab gui: no display: %s\n", why.c_str());
    return 2;
  }
  if (!launch.announce()) return 1;
  // Before the dataset's second of loading: --backend cuda with no GPU visible is said at once.
  const DevicePlan plan = plan_devices(o.train.settings.devices, gpus);
  check_gpu_visible(plan);
  // No display: said before the dataset's second of loading, as the window would say it. Only
  // worker 0 opens a window; every worker leaves with its answer.
  std::string no_display;
  if (std::string why; chief && !gui::can_open_window(&why))
    no_display = gui::no_display_message(why);
  if (!launch.agree(no_display, o.train)) return 2;
  core::set_blas_single_threaded();
  std::string too_many;
  auto data = std::make_shared<core::FashionMnist>(load_training_data(o.train, &too_many));
  if (!too_many.empty()) {
    launch.refuse(too_many);
    return 2;
  }
  if (!launch.same_data(*data)) return 2;
  const core::SessionConfig config = session_config(o, gpus, plan, workers ? workers->size() : 1);
  if (workers && !chief) return follow_the_window(launch, std::move(data), config);
  return run_window(launch, std::move(data), config, app);
#else
  return 2;  // refused above
#endif
}

}  // namespace mirrorlab::app
