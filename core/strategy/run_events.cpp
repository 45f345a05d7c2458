#include "core/strategy/run_events.h"

#include <sstream>
#include <stdexcept>

namespace mirrorlab::core {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::kBroadcastInit: return "broadcast-init";
    case Phase::kSplit: return "split";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kAllReduce: return "all-reduce";
    case Phase::kUpdate: return "update";
    case Phase::kEvaluate: return "evaluate";
    case Phase::kWait: return "wait";
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

std::string EventStore::chrome_trace(const std::vector<std::string>& device_names) const {
  std::ostringstream out;
  const auto micros = [this](vgpu::TimePoint t) {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  };
  out << "{\"traceEvents\":[\n";
  bool first = true;
  for (std::size_t d = 0; d < device_names.size(); ++d) {
    out << (first ? "" : ",\n") << R"({"ph":"M","name":"thread_name","pid":1,"tid":)" << d
        << R"(,"args":{"name":")" << device_names[d] << "\"}}";
    first = false;
  }
  for (const RunEvent& e : snapshot()) {
    out << (first ? "" : ",\n") << R"({"ph":"X","pid":1,"tid":)" << e.device << R"(,"name":")"
        << to_string(e.phase) << R"(","ts":)" << micros(e.begin)
        << R"(,"dur":)" << micros(e.end) - micros(e.begin) << R"(,"args":{"step":)" << e.step
        << R"(,"bytes":)" << e.bytes << "}}";
    first = false;
  }
  out << "\n]}\n";
  return out.str();
}

}  // namespace mirrorlab::core
