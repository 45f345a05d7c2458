// Devices: one card per (logical) GPU: what it is (CPU-backed, logical on which card,
// physical), its memory bar (in use, peak, limit) and the phase of the step it is in. When the
// cards would be too narrow to read (many devices, a large font), one row per device instead.
#pragma once

#include <vector>

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

class DevicesPanel : public Panel {
 public:
  const char* name() const override { return "Devices"; }
  void Draw(FrameContext& frame) override;

 private:
  void follow_events(const core::SessionSnapshot& run);
  void draw_rows(FrameContext& frame);     // one row per device, for when cards would be too narrow
  void draw_workers(FrameContext& frame);  // several workers: their devices grouped by worker
  std::size_t draw_worker(FrameContext& frame, std::size_t w);  // one worker's: how many drawn
  void draw_unmade(FrameContext& frame);  // a run that could not be made: why, and its devices
  const void* session_ = nullptr;
  std::size_t events_seen_ = 0;
  std::vector<core::RunEvent> last_event_;  // per device, the latest training event
  std::vector<bool> has_event_;
};

// What a device is doing, from its latest event: while the run goes on, the phase after the
// one it last finished; otherwise where it stopped.
std::string describe_device_phase(const core::SessionSnapshot& run, bool has_event,
                                  const core::RunEvent& last);

}  // namespace mirrorlab::gui
