// Timestamped events of a run: which device did which phase of which step, when, moving how
// many bytes. Training appends; the GUI copies what is new once per frame; the same events
// export to Chrome trace JSON (chrome://tracing, ui.perfetto.dev).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "virtualgpu/clock.h"

namespace mirrorlab::core {

enum class Phase {
  kBroadcastInit,  // initial variables copied from replica 0 to every replica
  kSplit,          // this replica's shard of the global batch copied to its device
  kForward,
  kBackward,
  kAllReduce,
  kUpdate,
  kEvaluate,
};
inline constexpr int kNumPhases = 7;
const char* to_string(Phase phase);  // "split", "forward", ..., "all-reduce"

struct RunEvent {
  int device = 0;
  Phase phase = Phase::kSplit;
  std::int64_t step = 0;  // global training step (0-based); evaluation batches count on their own
  vgpu::TimePoint begin{}, end{};
  std::size_t bytes = 0;  // bytes copied or reduced, where the phase moves data
};

// Seconds spent per phase, for one device.
using PhaseTotals = std::array<double, kNumPhases>;

class EventStore {
 public:
  EventStore() : origin_(vgpu::Clock::now()) {}

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
