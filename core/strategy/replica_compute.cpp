#include "core/strategy/replica_compute.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/events/run_events.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

ReplicaCompute replica_compute_of(const std::vector<RunEvent>& events,
                                  const std::vector<std::int64_t>& steps) {
  ReplicaCompute result;
  if (steps.empty()) return result;
  // Forward, backward and update of each (step, device).
  std::map<std::pair<std::int64_t, int>, std::array<double, 3>> samples;
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    const int slot = e->phase == Phase::kForward    ? 0
                     : e->phase == Phase::kBackward ? 1
                     : e->phase == Phase::kUpdate   ? 2
                                                    : -1;
    if (slot < 0) continue;
    if (e->step < steps.front()) break;
    if (!std::binary_search(steps.begin(), steps.end(), e->step)) continue;
    samples[{e->step, e->device}][slot] += vgpu::seconds_between(e->begin, e->end);
  }
  std::vector<double> totals, phases[3];
  std::set<std::int64_t> counted;
  for (const auto& [key, p] : samples) {
    counted.insert(key.first);
    totals.push_back(p[0] + p[1] + p[2]);
    for (int k = 0; k < 3; ++k) phases[k].push_back(p[k]);
  }
  result.seconds = median(totals);
  result.forward = median(phases[0]);
  result.backward = median(phases[1]);
  result.update = median(phases[2]);
  result.steps = static_cast<int>(counted.size());
  return result;
}

ReplicaCompute measure_replica_compute(vgpu::Device& device, StrategyOptions strategy,
                                       const ReplicaComputeOptions& o,
                                       const ComputeProgress& progress,
                                       const std::function<bool()>& stop) {
  if (o.batch_per_replica == 0 || o.steps <= 0 || o.warmup_steps < 0 || !(o.max_seconds > 0)) {
    throw std::invalid_argument(
        "measuring a replica's compute needs a batch, steps and a time that are positive");
  }
  strategy.check_sync = false;  // one replica: nothing to compare
  EventStore events;
  MirroredStrategy mirrored({&device}, strategy, &events);
  const Dataset data = synthetic_dataset(o.batch_per_replica);
  std::vector<std::uint32_t> order(data.size());
  std::iota(order.begin(), order.end(), 0u);
  const GlobalBatch batch{&data, order, o.batch_per_replica};
  const auto stop_asked = [&] { return stop && stop(); };

  ReplicaCompute result;
  for (int i = 0; i < o.warmup_steps && !stop_asked(); ++i) mirrored.train_step(batch);
  const std::int64_t first = mirrored.steps_done();
  const auto start = vgpu::Clock::now();
  while (result.steps < o.steps) {
    if (stop_asked()) {
      result.stopped = true;
      break;
    }
    if (result.steps >= 3 && vgpu::seconds_between(start, vgpu::Clock::now()) > o.max_seconds) {
      break;
    }
    mirrored.train_step(batch);
    ++result.steps;
    if (progress) progress(result.steps, o.steps);
  }
  std::vector<std::int64_t> measured(static_cast<std::size_t>(result.steps));
  std::iota(measured.begin(), measured.end(), first);
  const ReplicaCompute phases = replica_compute_of(events.snapshot(), measured);
  result.seconds = phases.seconds;
  result.forward = phases.forward;
  result.backward = phases.backward;
  result.update = phases.update;
  return result;
}

}  // namespace mirrorlab::core
