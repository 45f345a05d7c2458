#include "core/strategy/events/run_events.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace mirrorlab::core {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::kBroadcastInit:
      return "broadcast-init";
    case Phase::kSplit:
      return "split";
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kAllReduce:
      return "all-reduce";
    case Phase::kUpdate:
      return "update";
    case Phase::kEvaluate:
      return "evaluate";
    case Phase::kWait:
      return "wait";
  }
  return "unknown";
}

void EventStore::add(const RunEvent& event) {
  std::lock_guard lock(mutex_);
  events_.push_back(event);
}

std::size_t EventStore::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::vector<RunEvent> EventStore::snapshot() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::size_t EventStore::copy_since(std::size_t from, std::vector<RunEvent>& out) const {
  std::lock_guard lock(mutex_);
  if (from < events_.size()) out.insert(out.end(), events_.begin() + from, events_.end());
  return events_.size();
}

std::vector<PhaseTotals> EventStore::phase_totals() const {
  std::lock_guard lock(mutex_);
  std::vector<PhaseTotals> totals;
  for (const RunEvent& e : events_) {
    if (e.device >= static_cast<int>(totals.size())) totals.resize(e.device + 1, PhaseTotals{});
    totals[e.device][static_cast<int>(e.phase)] += vgpu::seconds_between(e.begin, e.end);
  }
  return totals;
}

HiddenAllReduce EventStore::hidden_all_reduce() const {
  return core::hidden_all_reduce(snapshot());
}

HiddenAllReduce hidden_all_reduce(const std::vector<RunEvent>& events, std::int64_t from_step) {
  std::map<std::pair<std::int64_t, int>, const RunEvent*> backward;
  for (const RunEvent& e : events) {
    if (e.phase == Phase::kBackward && e.step >= from_step) backward[{e.step, e.device}] = &e;
  }
  HiddenAllReduce h;
  for (const RunEvent& e : events) {
    if (e.phase != Phase::kAllReduce || e.step < from_step) continue;
    h.all_reduce += vgpu::seconds_between(e.begin, e.end);
    const auto b = backward.find({e.step, e.device});
    if (b == backward.end()) continue;
    const vgpu::TimePoint from = std::max(e.begin, b->second->begin);
    const vgpu::TimePoint to = std::min(e.end, b->second->end);
    if (from < to) h.hidden += vgpu::seconds_between(from, to);
  }
  return h;
}

PacksDuringBackward packs_during_backward(const std::vector<RunEvent>& events,
                                          std::int64_t from_step) {
  std::map<std::pair<std::int64_t, int>, vgpu::TimePoint> backward_end, first_asked;
  for (const RunEvent& e : events) {
    if (e.step < from_step) continue;
    const std::pair key{e.step, e.device};
    if (e.phase == Phase::kBackward) backward_end[key] = e.end;
    if (e.phase == Phase::kWait || e.phase == Phase::kAllReduce) {
      const auto [it, added] = first_asked.try_emplace(key, e.begin);
      if (!added) it->second = std::min(it->second, e.begin);
    }
  }
  PacksDuringBackward p;
  for (const auto& [key, end] : backward_end) {
    ++p.pairs;
    const auto asked = first_asked.find(key);
    if (asked != first_asked.end() && asked->second < end) ++p.early;
  }
  return p;
}

std::vector<TraceEvent> EventStore::trace_events(vgpu::TimePoint origin) const {
  const auto micros = [origin](vgpu::TimePoint t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  std::vector<TraceEvent> out;
  for (const RunEvent& e : snapshot()) {
    out.push_back(TraceEvent{e.device, e.phase, e.step, micros(e.begin), micros(e.end), e.bytes,
                             e.pack, e.lane});
  }
  return out;
}

std::string EventStore::chrome_trace(const std::vector<std::string>& device_names) const {
  return core::chrome_trace({TraceProcess{"", device_names, trace_events(origin_), ""}});
}

std::string chrome_trace(const std::vector<TraceProcess>& processes) {
  std::ostringstream out;
  // Microseconds to the nanosecond: the stream's default 6 digits would round an event an hour
  // into a run to 10 ms.
  out << std::fixed << std::setprecision(3);
  out << "{\"traceEvents\":[\n";
  bool first = true;
  const auto next = [&] {
    out << (first ? "" : ",\n");
    first = false;
  };
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const TraceProcess& process = processes[p];
    const std::size_t pid = p + 1;
    if (!process.name.empty()) {
      next();
      out << R"({"ph":"M","name":"process_name","pid":)" << pid << R"(,"args":{"name":")"
          << process.name << "\"}}";
    }
    if (!process.gpu_work.empty()) {
      next();
      out << R"({"ph":"M","name":"gpu_work_per_step","pid":)" << pid << R"(,"args":)"
          << process.gpu_work << "}";
    }
    const std::size_t devices = process.lanes.size();
    std::vector<bool> communicates(devices, false);
    for (const TraceEvent& e : process.events) {
      const auto d = static_cast<std::size_t>(e.device);
      if (e.lane == Lane::kCommunication && d < devices) communicates[d] = true;
    }
    const auto thread = [&](std::size_t tid, const std::string& name, std::size_t order) {
      next();
      out << R"({"ph":"M","name":"thread_name","pid":)" << pid << R"(,"tid":)" << tid
          << R"(,"args":{"name":")" << name << "\"}},\n";
      out << R"({"ph":"M","name":"thread_sort_index","pid":)" << pid << R"(,"tid":)" << tid
          << R"(,"args":{"sort_index":)" << order << "}}";
    };
    for (std::size_t d = 0; d < devices; ++d) {
      thread(d, process.lanes[d], 2 * d);
      if (communicates[d]) thread(devices + d, process.lanes[d] + " communication", 2 * d + 1);
    }
    for (const TraceEvent& e : process.events) {
      next();
      const std::size_t tid = e.lane == Lane::kCommunication
                                  ? devices + static_cast<std::size_t>(e.device)
                                  : static_cast<std::size_t>(e.device);
      out << R"({"ph":"X","pid":)" << pid << R"(,"tid":)" << tid << R"(,"name":")"
          << to_string(e.phase);
      if (e.pack >= 0) out << " (pack " << e.pack + 1 << ")";
      out << R"(","ts":)" << e.begin_us << R"(,"dur":)" << e.end_us - e.begin_us
          << R"(,"args":{"step":)" << e.step << R"(,"bytes":)" << e.bytes;
      if (e.pack >= 0) out << R"(,"pack":)" << e.pack;
      out << "}}";
    }
  }
  out << "\n]}\n";
  return out.str();
}

}  // namespace mirrorlab::core
