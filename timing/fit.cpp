#include "timing/fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace mirrorlab::timing {
namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }

// The samples' bandwidths by size (sorted), made to fall with the size: the closest such curve
// in least squares (pool adjacent violators: a size faster than a smaller one is averaged with
// it), so that one lucky or unlucky size does not bend its neighbours.
BandwidthCurve curve(const std::vector<MemorySample>& samples, double MemorySample::*field) {
  struct Block {
    double sum = 0;
    int count = 0;
    double mean() const { return sum / count; }
  };
  std::vector<Block> blocks;
  for (const MemorySample& s : samples) {
    blocks.push_back({s.*field, 1});
    while (blocks.size() > 1 && blocks.back().mean() > blocks[blocks.size() - 2].mean()) {
      const Block last = blocks.back();
      blocks.pop_back();
      blocks.back().sum += last.sum;
      blocks.back().count += last.count;
    }
  }
  std::vector<std::pair<double, double>> points;
  std::size_t i = 0;
  for (const Block& b : blocks) {
    for (int k = 0; k < b.count; ++k) points.emplace_back(samples[i++].bytes, b.mean());
  }
  return BandwidthCurve(std::move(points));
}

constexpr double MemorySample::*kPeerFields[] = {
    &MemorySample::copy_peer_one, &MemorySample::reduce_peer_one, &MemorySample::copy_peer_all,
    &MemorySample::reduce_peer_all};

}  // namespace

Topology shared_memory_topology(const std::vector<MemorySample>& samples, int engines) {
  if (samples.empty()) throw std::invalid_argument("fitting a memory needs at least one size");
  std::vector<MemorySample> sorted = samples;
  std::sort(sorted.begin(), sorted.end(),
            [](const MemorySample& a, const MemorySample& b) { return a.bytes < b.bytes; });
  for (const MemorySample& s : sorted) {
    if (!positive(s.bytes) || !positive(s.copy_one) || !positive(s.reduce_one) ||
        !positive(s.copy_all) || !positive(s.reduce_all)) {
      throw std::invalid_argument("a memory sample's size and bandwidths must be positive "
                                  "and finite");
    }
  }
  bool peer = true;
  for (const MemorySample& s : sorted) {
    for (double MemorySample::*field : kPeerFields) {
      const double v = s.*field;
      if (v != 0 && !positive(v)) {
        throw std::invalid_argument("a peer bandwidth must be positive and finite, or 0");
      }
      peer = peer && v > 0;
    }
  }
  if (engines < 0) throw std::invalid_argument("the number of engines must be 0 or more");
  Topology t;
  t.fabric = Fabric::kSharedMemory;
  t.memory.copy_all = curve(sorted, &MemorySample::copy_all);
  t.memory.reduce_all = curve(sorted, &MemorySample::reduce_all);
  t.memory.copy_one = curve(sorted, &MemorySample::copy_one);
  t.memory.reduce_one = curve(sorted, &MemorySample::reduce_one);
  if (peer) {
    t.memory.copy_peer_one = curve(sorted, &MemorySample::copy_peer_one);
    t.memory.reduce_peer_one = curve(sorted, &MemorySample::reduce_peer_one);
    t.memory.copy_peer_all = curve(sorted, &MemorySample::copy_peer_all);
    t.memory.reduce_peer_all = curve(sorted, &MemorySample::reduce_peer_all);
  }
  t.memory.engines = engines;
  return t;
}

double fit_step_latency(const Topology& topology, const std::vector<AllReduceSample>& samples) {
  Topology without = topology;
  without.step_latency = 0;
  // Minimise sum(((b + k L) - m) / m)^2 over L: L = sum(k (m - b) / m^2) / sum(k^2 / m^2).
  double numerator = 0, denominator = 0;
  for (const AllReduceSample& s : samples) {
    const double steps = static_cast<double>(s.schedule.steps.size());
    if (steps == 0 || !positive(s.seconds)) continue;
    const double bandwidth_part = estimate(s.schedule, without).seconds;
    const double w = 1.0 / (s.seconds * s.seconds);
    numerator += steps * (s.seconds - bandwidth_part) * w;
    denominator += steps * steps * w;
  }
  return denominator > 0 ? std::max(0.0, numerator / denominator) : 0.0;
}

std::vector<Prediction> predict(const Topology& topology,
                                const std::vector<AllReduceSample>& samples) {
  std::vector<Prediction> out;
  for (const AllReduceSample& s : samples) {
    const Estimate e = estimate(s.schedule, topology);
    const auto slowest = std::max_element(
        e.steps.begin(), e.steps.end(),
        [](const StepEstimate& a, const StepEstimate& b) { return a.seconds < b.seconds; });
    std::string bottleneck;
    if (slowest != e.steps.end()) {
      bottleneck.append(slowest->phase).append(": ").append(slowest->bottleneck);
    }
    out.push_back({s.algorithm, s.schedule.ranks, s.schedule.bytes, s.seconds, e.seconds,
                   bottleneck});
  }
  return out;
}

}  // namespace mirrorlab::timing
