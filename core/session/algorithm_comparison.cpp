#include "core/session/algorithm_comparison.h"

#include <algorithm>
#include <memory>

#include "virtualgpu/measure/stream_bandwidth.h"

namespace mirrorlab::core {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One algorithm's strategy and its own events (the all-reduce time of each step comes from
// them), built beside the session's.
struct Contender {
  std::unique_ptr<EventStore> events = std::make_unique<EventStore>();
  std::unique_ptr<MirroredStrategy> strategy;
  std::vector<double> step_seconds, all_reduce_seconds;
  std::size_t timing = 0;  // index into AlgorithmComparison::timings
};

// The longest all-reduce span over the devices in step `step`: the collective is done when
// its slowest rank is.
double all_reduce_seconds_of_step(const EventStore& events, std::int64_t step) {
  double longest = 0;
  for (const RunEvent& e : events.snapshot()) {
    if (e.phase == Phase::kAllReduce && e.step == step) {
      longest = std::max(longest, vgpu::seconds_between(e.begin, e.end));
    }
  }
  return longest;
}

}  // namespace

AlgorithmComparison compare_algorithms(
    const std::vector<vgpu::Device*>& devices, const Dataset& train, StrategyOptions strategy,
    const ComparisonOptions& options, const std::function<bool()>& cancelled,
    const std::function<void(const AlgorithmComparison&)>& progress) {
  AlgorithmComparison result;
  const auto stop = [&] { return cancelled && cancelled(); };
  const auto report = [&] {
    if (progress) progress(result);
  };
  std::vector<Contender> contenders;
  try {
    for (const std::string& name : options.algorithms) {
      AlgorithmTiming timing;
      timing.algorithm = name;
      strategy.all_reduce = name;
      Contender c;
      try {
        c.strategy = std::make_unique<MirroredStrategy>(devices, strategy, c.events.get());
        c.timing = result.timings.size();
        result.gradient_bytes = c.strategy->replica(0).model().params().size_bytes();
        contenders.push_back(std::move(c));
      } catch (const std::invalid_argument& e) {  // the devices cannot run it: say why
        timing.available = false;
        timing.reason = e.what();
      }
      result.timings.push_back(timing);
    }
    report();

    // Training steps, round by round: every algorithm sees the same batches in turn.
    const std::size_t global = options.batch_per_replica * devices.size();
    const std::vector<std::uint32_t> order = shuffled_indices(train.size(), 99, 1);
    for (int round = 0; round <= options.rounds && !stop(); ++round) {
      const std::size_t begin = (static_cast<std::size_t>(round) * global) % train.size();
      const std::size_t count = std::min(global, train.size() - begin);
      const GlobalBatch batch{&train, std::span(order).subspan(begin, count),
                              options.batch_per_replica};
      for (Contender& c : contenders) {
        const auto start = vgpu::Clock::now();
        c.strategy->train_step(batch);
        const double seconds = vgpu::seconds_between(start, vgpu::Clock::now());
        if (round == 0) continue;  // warm-up: first touch of the pages, cold caches
        c.step_seconds.push_back(seconds);
        c.all_reduce_seconds.push_back(
            all_reduce_seconds_of_step(*c.events, c.strategy->steps_done() - 1));
        AlgorithmTiming& t = result.timings[c.timing];
        t.step_seconds = median(c.step_seconds);
        t.all_reduce_seconds = median(c.all_reduce_seconds);
        t.steps = static_cast<int>(c.step_seconds.size());
      }
      report();
    }
    // Free the contenders' models before the sweep takes its buffers from the same arenas.
    std::vector<std::string> sweep_algorithms;
    for (Contender& c : contenders) sweep_algorithms.push_back(c.strategy->all_reduce().name());
    contenders.clear();

    if (!stop()) {
      result.copy_bandwidth =
          vgpu::measure_memory_bound(devices, std::size_t{32} << 20, 4).bandwidth;
      report();
    }
    for (std::size_t bytes : vgpu::sweep_sizes(options.sweep)) {
      for (const std::string& name : sweep_algorithms) {
        if (stop()) break;
        vgpu::AllReduceBenchOptions one = options.sweep;
        one.min_bytes = one.max_bytes = bytes;
        const auto algorithm = vgpu::make_all_reduce(name, devices, 0);  // nccl needs them
        for (const auto& row :
             vgpu::run_allreduce_sweep(devices, *algorithm, one, result.copy_bandwidth)) {
          result.sweep.push_back(row);
        }
        report();
      }
    }
    result.complete = !stop();
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (stop() && result.error.empty()) result.error = "stopped before the end";
  report();
  return result;
}

}  // namespace mirrorlab::core
