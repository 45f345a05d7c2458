// Timestamped events of a run: which device did which phase of which step, when, moving how
// many bytes. Training appends; the GUI copies what is new once per frame; the same events
// export to Chrome trace JSON (chrome://tracing, ui.perfetto.dev).
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "core/strategy/events/run_event.h"
#include "core/strategy/step_listener.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {

// An event as a trace holds it: times in microseconds since the trace's origin (which several
// workers share: each measures from the same moment, met at a barrier).
struct TraceEvent {
  int device = 0;
  Phase phase = Phase::kSplit;
  std::int64_t step = 0;
  double begin_us = 0, end_us = 0;
  std::size_t bytes = 0;
  int pack = -1;  // as RunEvent's
  Lane lane = Lane::kCompute;
};

// One process of a Chrome trace (a worker): its name, one lane per device, its events.
struct TraceProcess {
  std::string name;
  std::vector<std::string> lanes;  // indexed by TraceEvent::device
  std::vector<TraceEvent> events;
  // A JSON object, or empty: what a training step asked of the process's GPUs (launches, waits,
  // copies, events by phase), as a metadata event "gpu_work_per_step" with it as its args.
  std::string gpu_work;
};

// Chrome trace JSON ("traceEvents", complete events): process i is pid i + 1 (named, when it has
// a name), each lane a thread of it (tid = device); a device's communication lane, where it has
// events, is the thread tid = lanes + device, named "<device> communication" and sorted under it.
std::string chrome_trace(const std::vector<TraceProcess>& processes);

// Of the all-reduces' seconds, those spent while the same device's backward of the same step
// still ran (gradient packs overlapping backward), over every device: what overlap hid.
struct HiddenAllReduce {
  double all_reduce = 0;  // seconds of kAllReduce, every device and step
  double hidden = 0;      // of them, within the device's backward of that step
};
// Over the training steps of `events` from step `from_step` on.
HiddenAllReduce hidden_all_reduce(const std::vector<RunEvent>& events, std::int64_t from_step = 0);

// For each training step and device: whether its first pack's all-reduce was asked for (the
// earliest wait or all-reduce of the step on that device begins) before the device's backward of
// the step ended. Packs overlapping backward make it so in nearly every step, however the threads
// are scheduled; with one buffer, or overlap off, never. Timing-robust where hidden_all_reduce()
// is not: a straggling replica delays the all-reduce itself past backward, not the asking.
struct PacksDuringBackward {
  int early = 0;  // (step, device) pairs whose first pack was asked for while backward still ran
  int pairs = 0;  // (step, device) pairs with a backward
};
PacksDuringBackward packs_during_backward(const std::vector<RunEvent>& events,
                                          std::int64_t from_step = 0);

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
  // hidden_all_reduce() (below) of every event so far.
  HiddenAllReduce hidden_all_reduce() const;
  vgpu::TimePoint origin() const { return origin_; }

  // The events with their times in microseconds since `origin`.
  std::vector<TraceEvent> trace_events(vgpu::TimePoint origin) const;
  // Chrome trace JSON (microseconds since origin()), one process, one track per device named by
  // device_names[device]. Write it with core::OutputFile.
  std::string chrome_trace(const std::vector<std::string>& device_names) const;

 private:
  vgpu::TimePoint origin_;
  mutable std::mutex mutex_;
  std::vector<RunEvent> events_;
};

}  // namespace mirrorlab::core
