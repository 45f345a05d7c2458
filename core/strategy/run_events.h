// Timestamped events of a run: which device did which phase of which step, when, moving how
// many bytes. Training appends; the GUI copies what is new once per frame; the same events
// export to Chrome trace JSON (chrome://tracing, ui.perfetto.dev).
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "core/strategy/run_event.h"
#include "core/strategy/step_listener.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {

// A listener of the strategy's steps that keeps every timed phase (on_phase).
class EventStore : public StepListener {
 public:
  EventStore() : origin_(vgpu::Clock::now()) {}

  void on_phase(const RunEvent& event) override { add(event); }

  void add(const RunEvent& event);
  std::size_t size() const;
  std::vector<RunEvent> snapshot() const;
  // Appends to `out` the events from index `from` on; returns the new size (the next `from`).
  std::size_t copy_since(std::size_t from, std::vector<RunEvent>& out) const;
  // Per device (index = device), seconds per phase.
  std::vector<PhaseTotals> phase_totals() const;
  vgpu::TimePoint origin() const { return origin_; }

  // Chrome trace JSON ("traceEvents", complete events, microseconds since origin), one track
  // per device named by device_names[device]. Write it with core::OutputFile.
  std::string chrome_trace(const std::vector<std::string>& device_names) const;

 private:
  vgpu::TimePoint origin_;
  mutable std::mutex mutex_;
  std::vector<RunEvent> events_;
};

}  // namespace mirrorlab::core
