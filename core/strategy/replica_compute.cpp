#include "core/strategy/replica_compute.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {
namespace {

// Each step's forward, backward and update on the one replica, as the strategy times them.
class PhaseClock : public StepListener {
 public:
  void on_phase(const RunEvent& event) override {
    const int slot = event.phase == Phase::kForward    ? 0
                     : event.phase == Phase::kBackward ? 1
                     : event.phase == Phase::kUpdate   ? 2
                                                       : -1;
    if (slot < 0) return;
    std::lock_guard lock(mutex_);
    steps_[event.step][slot] += vgpu::seconds_between(event.begin, event.end);
  }
  std::vector<std::array<double, 3>> phases_of(std::int64_t first_step) const {
    std::lock_guard lock(mutex_);
    std::vector<std::array<double, 3>> out;
    for (const auto& [step, phases] : steps_) {
      if (step >= first_step) out.push_back(phases);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::int64_t, std::array<double, 3>> steps_;
};

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

ReplicaCompute measure_replica_compute(vgpu::Device& device, StrategyOptions strategy,
                                       const ReplicaComputeOptions& o,
                                       const ComputeProgress& progress,
                                       const std::function<bool()>& stop) {
  if (o.batch_per_replica == 0 || o.steps <= 0 || o.warmup_steps < 0 || !(o.max_seconds > 0)) {
    throw std::invalid_argument(
        "measuring a replica's compute needs a batch, steps and a time that are positive");
  }
  strategy.check_sync = false;  // one replica: nothing to compare
  PhaseClock clock;
  MirroredStrategy mirrored({&device}, strategy);
  mirrored.add_listener(&clock);
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
  std::vector<double> totals, phases[3];
  for (const auto& step : clock.phases_of(first)) {
    totals.push_back(step[0] + step[1] + step[2]);
    for (int p = 0; p < 3; ++p) phases[p].push_back(step[p]);
  }
  result.seconds = median(totals);
  result.forward = median(phases[0]);
  result.backward = median(phases[1]);
  result.update = median(phases[2]);
  return result;
}

}  // namespace mirrorlab::core
