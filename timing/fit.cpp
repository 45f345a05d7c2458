#include "timing/fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace mirrorlab::timing {
namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }

// The values made to fall (or rise) from one to the next: the closest such sequence in least
// squares, by pooling adjacent violators (a value above the one before it is averaged with it).
std::vector<double> monotone(const std::vector<double>& values, bool falling) {
  struct Block {
    double sum = 0;
    int count = 0;
    double mean() const { return sum / count; }
  };
  std::vector<Block> blocks;
  for (double v : values) {
    blocks.push_back({v, 1});
    while (blocks.size() > 1 &&
           (falling ? blocks.back().mean() > blocks[blocks.size() - 2].mean()
                    : blocks.back().mean() < blocks[blocks.size() - 2].mean())) {
      const Block last = blocks.back();
      blocks.pop_back();
      blocks.back().sum += last.sum;
      blocks.back().count += last.count;
    }
  }
  std::vector<double> out;
  for (const Block& b : blocks) out.insert(out.end(), static_cast<std::size_t>(b.count), b.mean());
  return out;
}

double squared_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

// The values made to rise and then fall: the closest such sequence in least squares, over every
// place the rise may end.
std::vector<double> rise_then_fall(const std::vector<double>& values) {
  std::vector<double> best;
  double best_distance = 0;
  for (std::size_t k = 0; k <= values.size(); ++k) {
    std::vector<double> fit = monotone({values.begin(), values.begin() + k}, false);
    const std::vector<double> fall = monotone({values.begin() + k, values.end()}, true);
    fit.insert(fit.end(), fall.begin(), fall.end());
    const double d = squared_distance(fit, values);
    if (best.empty() || d < best_distance) {
      best = std::move(fit);
      best_distance = d;
    }
  }
  return best;
}

// The samples' bandwidths by size (sorted) as the curve a memory can have, so that one lucky or
// unlucky size does not bend its neighbours. Reading its own writes, a memory is never faster
// over more bytes: the curve falls. Reading another engine's writes it may first get faster:
// over few bytes they all sit in the writer's private cache, which the reader reaches slowly,
// and over more the writer has evicted most of them to a cache they share; past that cache both
// fall alike. So a peer curve rises, then falls.
BandwidthCurve curve(const std::vector<MemorySample>& samples, double MemorySample::*field,
                     bool peer) {
  std::vector<double> values;
  for (const MemorySample& s : samples) values.push_back(s.*field);
  values = peer ? rise_then_fall(values) : monotone(values, true);
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < samples.size(); ++i) points.emplace_back(samples[i].bytes, values[i]);
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
  t.memory.copy_all = curve(sorted, &MemorySample::copy_all, false);
  t.memory.reduce_all = curve(sorted, &MemorySample::reduce_all, false);
  t.memory.copy_one = curve(sorted, &MemorySample::copy_one, false);
  t.memory.reduce_one = curve(sorted, &MemorySample::reduce_one, false);
  if (peer) {
    t.memory.copy_peer_one = curve(sorted, &MemorySample::copy_peer_one, true);
    t.memory.reduce_peer_one = curve(sorted, &MemorySample::reduce_peer_one, true);
    t.memory.copy_peer_all = curve(sorted, &MemorySample::copy_peer_all, true);
    t.memory.reduce_peer_all = curve(sorted, &MemorySample::reduce_peer_all, true);
  }
  t.memory.engines = engines;
  return t;
}

Latencies fit_latencies(const Topology& topology, const std::vector<AllReduceSample>& samples) {
  Topology without = topology;
  without.step_latency = 0;
  without.call_latency = 0;
  // Minimise sum(w (C + k L - r)^2), r = m - b the time the bandwidth leaves, w = 1 / m^2 (the
  // error relative to the measured time), over C (once a call) and L (once a step): the normal
  // equations [sw swk; swk swkk] [C; L] = [swr; swkr].
  double sw = 0, swk = 0, swkk = 0, swr = 0, swkr = 0;
  for (const AllReduceSample& s : samples) {
    const double k = static_cast<double>(s.schedule.steps.size());
    if (k == 0 || !positive(s.seconds)) continue;
    const double r = s.seconds - estimate(s.schedule, without).seconds;
    const double w = 1.0 / (s.seconds * s.seconds);
    sw += w;
    swk += w * k;
    swkk += w * k * k;
    swr += w * r;
    swkr += w * k * r;
  }
  if (sw == 0) return {};
  const double det = sw * swkk - swk * swk;
  // Both free, where the samples tell them apart (more than one number of steps) and both come
  // out at 0 or more; otherwise the best with one of them at 0.
  if (det > 1e-12 * sw * swkk) {
    const Latencies both{(swr * swkk - swk * swkr) / det, (sw * swkr - swk * swr) / det};
    if (both.call >= 0 && both.step >= 0) return both;
  }
  const Latencies step_only{0, std::max(0.0, swkr / swkk)};
  const Latencies call_only{std::max(0.0, swr / sw), 0};
  const auto cost = [&](const Latencies& l) {
    // sum(w (C + kL - r)^2) up to a constant: the terms that depend on C and L.
    return sw * l.call * l.call + swkk * l.step * l.step + 2 * swk * l.call * l.step -
           2 * swr * l.call - 2 * swkr * l.step;
  };
  return cost(step_only) <= cost(call_only) ? step_only : call_only;
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
