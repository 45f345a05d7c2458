// The panel interface. A panel draws one feature of the run (devices, timeline, ...) from the
// snapshot the window copied this frame; it never calls into training except through the
// session's non-blocking commands. A panel with state (zoom, a chosen layer) keeps it in its
// own struct; what every panel shares lives in ViewSettings.
//
// To add a panel: derive from Panel, give it a name() (its window title and report key), draw
// the contents in Draw() (the window calls ImGui::Begin/End around it), report what was drawn
// with frame.report.drew(name(), "what", count), and add it to make_panels() with its place in
// layout() (gui/panels/panel_layout.cpp). gui/README.md says more.
#pragma once

#include <cstdint>
#include <string>

#include "core/session/training_session.h"
#include "gui/drawing/text_fonts.h"
#include "gui/model/gui_report.h"
#include "gui/model/topology_catalog.h"
#include "gui/model/view_settings.h"

namespace mirrorlab::gui {

// What panels may ask of the window.
class AppActions {
 public:
  virtual ~AppActions() = default;
  // Replaces the session by one built from `config` (the old one is stopped first). A config
  // that cannot be built leaves no session and shows the error.
  virtual void reconfigure(const core::SessionConfig& config) = 0;
  virtual void save_screenshot() = 0;  // at the end of this frame, to a numbered PNG
  // Replaces the session by one that goes on from the newest checkpoint in `folder`, with the
  // checkpoint's settings and the current devices. A checkpoint that cannot be read leaves the
  // current session as it was and says why (load_error()); one that does not fit this window's
  // data leaves no run and says why, as a setting that cannot work does.
  virtual void load_checkpoint(const std::string& folder) = 0;
  virtual const std::string& load_error() const = 0;
};

struct FrameContext {
  const core::SessionSnapshot& run;   // this frame's copy of the run
  core::TrainingSession* session;     // commands; nullptr when no session could be built
  const core::SessionConfig& config;  // the configuration last asked for
  const std::string& setup_error;     // why that configuration could not be built, or ""
  ViewSettings& view;
  GuiReport& report;
  AppActions& actions;
  double seconds_since_start = 0;    // for small animations (the running indicator)
  const TextFonts* fonts = nullptr;  // bold and monospaced faces, where found
  std::uint64_t run_id = 0;          // changes whenever the run shown is another one
  // The machines the timing model can show (the presets and this machine's fit).
  const TopologyCatalog* machines = nullptr;
};

class Panel {
 public:
  virtual ~Panel() = default;
  virtual const char* name() const = 0;
  // What its title bar says: its name, unless the panel says more (the lesson's title).
  virtual std::string title() const { return name(); }
  virtual void Draw(FrameContext& frame) = 0;
};

}  // namespace mirrorlab::gui
