#include "virtualgpu/cuda/gpu_work_counts.h"

#include <cstdio>

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
  // Short column heads: the table must fit a terminal of 100 columns.
  static constexpr const char* kHeads[kNumGpuWork] = {
      "kernels", "cuBLAS", "host waits", "to GPU",    "to host", "on GPU",
      "events",  "freed",  "recorded",   "GPU waits", "graphs"};
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
  std::string out = "phase     ";
  for (const char* head : kHeads) {
    out += ' ';
    out += head;
  }
  out += '\n';
  const auto row = [&](const char* name, const std::array<std::int64_t, kNumGpuWork>& counts) {
    char label[16];
    std::snprintf(label, sizeof label, "%-10s", name);
    out += label;
    for (int w = 0; w < kNumGpuWork; ++w) {
      const std::string value = cell(counts[w]);
      const std::size_t width = std::string(kHeads[w]).size();
      out.append(1 + (width > value.size() ? width - value.size() : 0), ' ');
      out += value;
    }
    out += '\n';
  };
  std::array<std::int64_t, kNumGpuWork> sum{};
  for (int p = 0; p < kNumWorkPhases; ++p) {
    if (static_cast<WorkPhase>(p) == WorkPhase::kOther) continue;
    row(to_string(static_cast<WorkPhase>(p)), table[p]);
    for (int w = 0; w < kNumGpuWork; ++w) sum[w] += table[p][w];
  }
  row("the step", sum);
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
