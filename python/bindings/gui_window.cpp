// mirrorlab.gui.watch's window: the GUI on a model's run, on a thread of its own, while Python
// trains the run (model.fit, or a custom loop) on its own thread. The window only reads the run
// (core::TrainingSession watching it); it never takes the GIL, so it draws while Python computes
// or waits, and Python never waits for it except to close it.
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/io/output_file.h"
#include "gui/panels/panel_layout.h"
#include "gui/window/app_options.h"
#include "gui/window/app_window.h"
#include "gui/window/display.h"  // NoDisplayError
#include "gui/window/screenshot.h"
#include "python/bindings/bindings.h"

namespace py = pybind11;

namespace mirrorlab::python {
namespace {

std::atomic<bool> a_window_is_open = false;  // Dear ImGui's context is the process's: one window

// The panel asked for, refused in the words of Python's argument (panel='Nope'): the check the
// command shares (check_app_options) names its flag, --panel, which Python has not.
void check_panel(const std::string& panel) {
  const std::string problem = gui::unknown_panel(panel, gui::make_panels());
  if (!problem.empty()) throw py::value_error("panel='" + panel + "': " + problem);
}

class Window {
 public:
  // `width` and `height` 0: 1600x1000 at most the screen's work area, as the command's default.
  Window(py::object run, int width, int height, float font_scale, bool present,
         const std::string& panel, const std::string& report)
      : run_(std::move(run)) {
    gui::AppOptions options;
    if (width == 0 && height == 0) {
      options.fit_screen = true;
      width = options.width;
      height = options.height;
    }
    if (width < 320 || height < 240 || width > 16384 || height > 16384) {
      throw py::value_error("the window's size is " + std::to_string(width) + "x" +
                            std::to_string(height) +
                            ": give width and height between 320x240 and 16384x16384");
    }
    if (!(font_scale >= 0.5f && font_scale <= 4.0f)) {
      throw py::value_error("font_scale " + std::to_string(font_scale) +
                            ": give one from 0.5 to 4 (1.5 or more for a projector)");
    }
    options.width = width;
    options.height = height;
    options.font_scale = font_scale;
    options.present = present;
    check_panel(panel);
    options.panel = panel;
    options.report = report;  // written as the window closes: a path it cannot be is said now
    if (!report.empty()) {
      try {
        core::check_output_path(report);
      } catch (const core::OutputFileError& e) {
        throw py::value_error(std::string("report: ") + e.what());
      }
    }
    if (std::string problem = gui::check_app_options(options); !problem.empty()) {
      throw py::value_error(problem);
    }
    options.close_requested = [this] { return closing_.load(); };
    // Each picture asked for has a number: a picture taken with F12 meanwhile, or one that
    // comes after its request timed out, answers no other request.
    options.screenshot_wanted = [this] {
      std::lock_guard lock(mutex_);
      if (wanted_.empty()) return std::string();
      taking_ = wanted_id_;
      taking_path_ = std::exchange(wanted_, std::string());
      return taking_path_;
    };
    options.screenshot_done = [this](const std::string& path, const std::string& problem) {
      std::lock_guard lock(mutex_);
      if (taking_ == 0 || path != taking_path_) return;  // F12's, not one asked for here
      taken_ = std::exchange(taking_, 0);
      not_written_ = problem;
      changed_.notify_all();
    };
    options.window_opened = [this] {
      std::lock_guard lock(mutex_);
      shown_ = true;
      changed_.notify_all();
    };
    // GLFW is one per process, and only the thread of the window that is open may use it. Asked
    // before the run's session is made: a watch refused leaves the run as it was.
    if (a_window_is_open.exchange(true)) {
      throw std::logic_error(
          "a mirrorlab window is open already: close it (its Watch's close(), or the window) "
          "before watching another run");
    }
    core::TrainingSession* made = nullptr;
    try {
      made = &watching_session_of(run_);  // this thread, between steps
    } catch (...) {
      a_window_is_open = false;
      throw;
    }
    core::TrainingSession& session = *made;
    open_ = true;
    session.set_recording(true);
    thread_ = std::thread([this, &session, options] {
      std::string error, no_display;
      try {
        gui::watch_run(session, options);
      } catch (const gui::NoDisplayError& e) {
        error = e.what();
        no_display = e.reason().empty() ? e.what() : e.reason();
      } catch (const std::exception& e) {
        error = e.what();
      }
      session.set_recording(false);  // no window shows them: the run pays nothing for them
      std::lock_guard lock(mutex_);
      error_ = error;
      no_display_ = no_display;
      open_ = false;
      a_window_is_open = false;
      changed_.notify_all();
    });
    // Returns once the window is on the screen, or says why it is not (one connection to the
    // display: none made just to ask first).
    bool shown = false;
    {
      py::gil_scoped_release waiting;  // before the lock: never the lock waiting for the GIL
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return shown_ || !open_; });
      shown = shown_;
    }
    if (shown) return;
    close();
    if (!no_display_.empty()) throw gui::NoDisplayError(no_display_);
    throw std::runtime_error("the window could not open: " + error_);
  }
  ~Window() { close(); }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Closes the window (if the user has not) and waits for its thread; idempotent.
  void close() {
    closing_ = true;
    std::thread window = std::move(thread_);  // with the GIL: one caller joins it
    if (window.joinable()) {
      py::gil_scoped_release waiting;
      window.join();
    }
  }
  bool is_open() {
    std::lock_guard lock(mutex_);
    return open_;
  }
  std::string error() {
    std::lock_guard lock(mutex_);
    return error_;
  }

  // The next frame drawn, written to `path` (a PNG or a JPEG, by its name); waits up to `timeout`
  // seconds for it.
  void screenshot(const std::string& path, double timeout) {
    if (std::string problem = gui::picture_name_problem(path); !problem.empty()) {
      throw py::value_error(problem);
    }
    bool was_open = true, taken = false;
    std::string not_written;
    {
      py::gil_scoped_release waiting;  // before the lock: never the lock waiting for the GIL
      std::unique_lock lock(mutex_);
      if (open_) {
        const std::uint64_t id = ++requests_;
        wanted_ = path;
        wanted_id_ = id;
        changed_.wait_for(lock, std::chrono::duration<double>(timeout),
                          [&] { return taken_ == id || !open_; });
        taken = taken_ == id;
        not_written = not_written_;
        if (!taken && wanted_id_ == id) wanted_.clear();  // not taken yet: not at all
      } else {
        was_open = false;
      }
      was_open = was_open && (taken || open_);
    }
    if (!taken) {
      throw std::runtime_error(!was_open
                                   ? "the window is closed: watch the run again to take a picture"
                                   : "the window drew no frame in " + std::to_string(timeout) +
                                         " s: is its display still there?");
    }
    if (!not_written.empty()) {
      throw std::runtime_error("the picture was not written: " + not_written);
    }
  }

 private:
  py::object run_;  // the model's _Run: kept while the window watches its session
  std::atomic<bool> closing_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  bool shown_ = false;  // the window reached the screen
  std::string error_;
  std::string no_display_;      // why no window could open, when that was the error
  std::uint64_t requests_ = 0;  // pictures asked for so far
  std::string wanted_;          // the path of the one asked for and not yet taken
  std::uint64_t wanted_id_ = 0;
  std::string taking_path_;               // the one the window is drawing
  std::uint64_t taking_ = 0, taken_ = 0;  // its number, and the last one written (or not)
  std::string not_written_;               // why the picture last taken was not written ("": it was)
  std::thread thread_;                    // last: starts once everything above is built
};

}  // namespace

void bind_window(py::module_& m) {
  m.attr("_has_window") = true;
  m.attr("_no_window_why") = "";
  py::register_exception<gui::NoDisplayError>(m, "_NoDisplayError", PyExc_RuntimeError);
  py::class_<Window>(m, "_Window")
      .def(py::init<py::object, int, int, float, bool, const std::string&, const std::string&>(),
           py::arg("run"), py::arg("width"), py::arg("height"), py::arg("font_scale"),
           py::arg("present"), py::arg("panel"), py::arg("report"))
      .def("close", &Window::close)
      .def_property_readonly("is_open", &Window::is_open)
      .def_property_readonly("error", &Window::error)
      .def("screenshot", &Window::screenshot, py::arg("path"), py::arg("timeout"));
}

}  // namespace mirrorlab::python
