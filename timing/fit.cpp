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

// How many of the first samples timed each kernel's launch rather than the memory: on a GPU,
// kernels launched back to back that each run for less than a launch takes cost the launch,
// the same few microseconds whatever their bytes, so the bandwidth seems to grow with the size.
// A sample is such while the time of a pass at the next size grows by less than the square root
// of the sizes' ratio (1.41 where the size doubles): a memory's time grows at least as fast as
// its bytes where its bandwidth falls.
std::size_t launch_bound_samples(const std::vector<MemorySample>& samples,
                                 double MemorySample::*field) {
  std::size_t k = 0;
  while (k + 1 < samples.size()) {
    const MemorySample& a = samples[k];
    const MemorySample& b = samples[k + 1];
    const double time_a = a.bytes / (a.*field), time_b = b.bytes / (b.*field);
    if (time_b >= time_a * std::sqrt(b.bytes / a.bytes)) break;
    ++k;
  }
  return k;
}

// The samples' bandwidths by size (sorted) as the curve a memory can have, so that one lucky or
// unlucky size does not bend its neighbours. Reading its own writes, a memory is never faster
// over more bytes: the curve falls. Samples that timed a kernel's launch instead
// (launch_bound_samples) say only that the memory is at least as fast there as at the first size
// that timed it: the curve keeps that size's value down to the smallest (the launches are the
// latencies' part of the model). Reading another engine's writes a memory may really get faster:
// over few bytes they all sit in the writer's private cache, which the reader reaches slowly, and
// over more the writer has evicted most of them to a cache they share; past that cache both fall
// alike. So a peer curve rises, then falls.
BandwidthCurve curve(const std::vector<MemorySample>& samples, double MemorySample::*field,
                     bool peer) {
  std::vector<double> values;
  for (const MemorySample& s : samples) values.push_back(s.*field);
  if (peer) {
    values = rise_then_fall(values);
  } else {
    const std::size_t launch = launch_bound_samples(samples, field);
    const std::vector<double> fall =
        monotone({values.begin() + static_cast<std::ptrdiff_t>(launch), values.end()}, true);
    values.assign(launch, fall.front());
    values.insert(values.end(), fall.begin(), fall.end());
  }
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
      throw std::invalid_argument(
          "a memory sample's size and bandwidths must be positive "
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

namespace {

// The least-squares latencies over those of `free` (bit 0: C, 1: L, 2: M; the others 0), from
// the normal equations a x = b of all three; false where those equations are singular.
bool solve_latencies(const double (&a)[3][3], const double (&b)[3], int free, double (&x)[3]) {
  int index[3], n = 0;
  for (int i = 0; i < 3; ++i) {
    x[i] = 0;
    if (free & (1 << i)) index[n++] = i;
  }
  double m[3][4];
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) m[r][c] = a[index[r]][index[c]];
    m[r][n] = b[index[r]];
  }
  // Gauss-Jordan with partial pivoting; a pivot tiny next to its diagonal is singular.
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    if (!(std::abs(m[pivot][c]) > 1e-9 * a[index[c]][index[c]])) return false;
    for (int k = 0; k <= n; ++k) std::swap(m[c][k], m[pivot][k]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
    }
  }
  for (int r = 0; r < n; ++r) x[index[r]] = m[r][n] / m[r][r];
  return true;
}

}  // namespace

Latencies fit_latencies(const Topology& topology, const std::vector<AllReduceSample>& samples) {
  Topology without = topology;
  without.step_latency = 0;
  without.move_latency = 0;
  without.call_latency = 0;
  // Minimise sum(w (C + k L + m M - r)^2), r = t - b the time the bandwidth leaves, w = 1 / t^2
  // (the error relative to the measured time t): the normal equations a [C L M] = b.
  double a[3][3] = {}, b[3] = {}, rr = 0;
  for (const AllReduceSample& s : samples) {
    const double k = static_cast<double>(s.schedule.steps.size());
    if (k == 0 || !positive(s.seconds)) continue;
    double moves = 0;
    for (const ScheduleStep& step : s.schedule.steps)
      moves += static_cast<double>(step.moves.size());
    const double x[3] = {1.0, k, moves};
    const double r = s.seconds - estimate(s.schedule, without).seconds;
    const double w = 1.0 / (s.seconds * s.seconds);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += w * x[i] * x[j];
      b[i] += w * x[i] * r;
    }
    rr += w * r * r;
  }
  if (a[0][0] == 0) return {};
  // All three free first, then the pairs, then one alone (the step's first): the best that
  // comes out at 0 or more, each kept only where it fits clearly better than those before it
  // (all three at 0 the first).
  Latencies best;
  double best_cost = rr;
  for (const int free : {7, 3, 6, 5, 2, 1, 4}) {
    double x[3];
    if (!solve_latencies(a, b, free, x) || x[0] < 0 || x[1] < 0 || x[2] < 0) continue;
    double cost = rr;  // sum(w (x.features - r)^2) = x'ax - 2x'b + rr
    for (int i = 0; i < 3; ++i) {
      cost -= 2 * x[i] * b[i];
      for (int j = 0; j < 3; ++j) cost += x[i] * a[i][j] * x[j];
    }
    if (cost < best_cost - 1e-9 * rr) {
      best = {x[0], x[1], x[2]};
      best_cost = cost;
    }
  }
  return best;
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
    out.push_back(
        {s.algorithm, s.schedule.ranks, s.schedule.bytes, s.seconds, e.seconds, bottleneck});
  }
  return out;
}

double memory_drift(const Topology& fitted, const MemorySample& now) {
  const MemorySpec& m = fitted.memory;
  if (m.copy_one.empty() || m.reduce_one.empty() || m.copy_all.empty() || m.reduce_all.empty()) {
    throw std::invalid_argument(fitted.id + " has no memory curves to compare with");
  }
  if (!positive(now.bytes))
    throw std::invalid_argument("a working set must be positive and finite");
  const std::pair<double, const BandwidthCurve*> pairs[] = {{now.copy_one, &m.copy_one},
                                                            {now.reduce_one, &m.reduce_one},
                                                            {now.copy_all, &m.copy_all},
                                                            {now.reduce_all, &m.reduce_all}};
  double sum = 0;
  for (const auto& [measured, curve] : pairs) {
    const double then = curve->at(now.bytes);
    if (!positive(measured) || !positive(then)) {
      throw std::invalid_argument("a memory bandwidth to compare must be positive and finite");
    }
    sum += (measured - then) / then;
  }
  return sum / 4;
}

}  // namespace mirrorlab::timing
