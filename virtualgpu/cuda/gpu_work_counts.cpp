#include "virtualgpu/cuda/gpu_work_counts.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace mirrorlab::vgpu {
namespace {

thread_local WorkPhase current_phase = WorkPhase::kOther;

}  // namespace

const char* to_string(GpuWork work) {
  switch (work) {
    case GpuWork::kKernel:
      return "kernels";
    case GpuWork::kBlas:
      return "cuBLAS calls";
    case GpuWork::kHostWait:
      return "host waits";
    case GpuWork::kCopyToDevice:
      return "copies to the GPU";
    case GpuWork::kCopyToHost:
      return "copies to the host";
    case GpuWork::kCopyOnDevice:
      return "copies on the GPU";
    case GpuWork::kEventMade:
      return "events made";
    case GpuWork::kEventDestroyed:
      return "events destroyed";
    case GpuWork::kEventRecorded:
      return "events recorded";
    case GpuWork::kStreamWait:
      return "stream waits";
    case GpuWork::kGraphLaunch:
      return "graphs launched";
  }
  return "?";
}

const char* to_string(WorkPhase phase) {
  switch (phase) {
    case WorkPhase::kSplit:
      return "split";
    case WorkPhase::kForward:
      return "forward";
    case WorkPhase::kBackward:
      return "backward";
    case WorkPhase::kAllReduce:
      return "all-reduce";
    case WorkPhase::kUpdate:
      return "update";
    case WorkPhase::kStepEnd:
      return "step end";
    case WorkPhase::kOther:
      return "other";
  }
  return "?";
}

GpuWorkTable difference(const GpuWorkTable& later, const GpuWorkTable& earlier) {
  GpuWorkTable d{};
  for (int p = 0; p < kNumWorkPhases; ++p) {
    for (int w = 0; w < kNumGpuWork; ++w) d[p][w] = later[p][w] - earlier[p][w];
  }
  return d;
}

std::int64_t total(const GpuWorkTable& table, GpuWork work) {
  std::int64_t sum = 0;
  for (const auto& row : table) sum += row[static_cast<int>(work)];
  return sum;
}

std::string format_gpu_work(const GpuWorkTable& table, double per) {
  // A row per kind of work and a column per phase of a step (kOther left out) with their total
  // at the end: 7 columns of at most 10 characters beside the longest kind, within 80 columns.
  const auto cell = [per](std::int64_t count) {
    char text[32];
    const double value = static_cast<double>(count) / (per > 0 ? per : 1.0);
    if (value == static_cast<double>(static_cast<std::int64_t>(value))) {
      std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
    } else if (value < 0.05) {
      std::snprintf(text, sizeof text, "<0.1");  // made once in a run: "0.0" would read as none
    } else {
      std::snprintf(text, sizeof text, "%.1f", value);
    }
    return std::string(text);
  };
  std::vector<std::string> heads;
  std::vector<const std::array<std::int64_t, kNumGpuWork>*> columns;
  std::array<std::int64_t, kNumGpuWork> sum{};
  for (int p = 0; p < kNumWorkPhases; ++p) {
    if (static_cast<WorkPhase>(p) == WorkPhase::kOther) continue;
    heads.push_back(to_string(static_cast<WorkPhase>(p)));
    columns.push_back(&table[p]);
    for (int w = 0; w < kNumGpuWork; ++w) sum[w] += table[p][w];
  }
  heads.push_back("the step");
  columns.push_back(&sum);
  std::size_t label = std::string("per step").size();
  for (int w = 0; w < kNumGpuWork; ++w)
    label = std::max(label, std::string(to_string(static_cast<GpuWork>(w))).size());
  // `text` after a space, right-aligned in `width` columns.
  const auto add_cell = [](std::string& line, const std::string& text, std::size_t width) {
    line.append(1 + (width > text.size() ? width - text.size() : 0), ' ');
    line.append(text);
  };
  const auto width = [&](std::size_t c) { return std::max<std::size_t>(heads[c].size(), 6); };
  std::string out = "per step";
  out.append(label - out.size(), ' ');
  for (std::size_t c = 0; c < heads.size(); ++c) add_cell(out, heads[c], width(c));
  out += '\n';
  for (int w = 0; w < kNumGpuWork; ++w) {
    const std::string kind = to_string(static_cast<GpuWork>(w));
    out.append(kind);
    out.append(label - kind.size(), ' ');
    for (std::size_t c = 0; c < columns.size(); ++c)
      add_cell(out, cell((*columns[c])[static_cast<std::size_t>(w)]), width(c));
    out += '\n';
  }
  return out;
}

void GpuWorkCounts::add(GpuWork work) {
  counts_[static_cast<int>(current_phase)][static_cast<int>(work)].fetch_add(
      1, std::memory_order_relaxed);
}

GpuWorkTable GpuWorkCounts::snapshot() const {
  GpuWorkTable table{};
  for (int p = 0; p < kNumWorkPhases; ++p) {
    for (int w = 0; w < kNumGpuWork; ++w)
      table[p][w] = counts_[p][w].load(std::memory_order_relaxed);
  }
  return table;
}

void GpuWorkCounts::reset() {
  for (auto& row : counts_) {
    for (auto& cell : row) cell.store(0, std::memory_order_relaxed);
  }
}

WorkPhaseScope::WorkPhaseScope(WorkPhase phase) : previous_(current_phase) {
  current_phase = phase;
}

WorkPhaseScope::~WorkPhaseScope() { current_phase = previous_; }

WorkPhase current_work_phase() { return current_phase; }

GpuWorkCounts& process_gpu_work_counts() {
  static GpuWorkCounts counts;
  return counts;
}

}  // namespace mirrorlab::vgpu
