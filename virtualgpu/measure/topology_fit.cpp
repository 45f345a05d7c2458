#include "virtualgpu/measure/topology_fit.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/measure/stream_bandwidth.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::vgpu {
namespace {

bool stopped(const StopRequested& stop) { return stop && stop(); }

// The first device bound to each CPU: the engines that can poll for each other. None when a
// device is not bound (CUDA, or MIRRORLAB_PROC_BIND=false).
std::vector<Device*> one_per_cpu(const std::vector<Device*>& devices) {
  std::vector<Device*> out;
  std::set<int> cpus;
  for (Device* d : devices) {
    if (d->is_cuda() || d->stream().bound_cpu() < 0) return {};
    if (cpus.insert(d->stream().bound_cpu()).second) out.push_back(d);
  }
  return out;
}

// One round at one working set: each bandwidth of `best` becomes the better of what it held and
// what this round measures.
void measure_memory_sample(const std::vector<Device*>& devices, const std::vector<Device*>& one,
                           const std::vector<Device*>& peers, std::size_t bytes,
                           std::size_t one_device_bytes, int iterations,
                           timing::MemorySample& best) {
  const std::size_t all = std::max(bytes, 2 * sizeof(float) * devices.size());
  const std::size_t alone = std::min(all, one_device_bytes);
  // Each run passes over a small working set several times (kBandwidthRunBytes in all).
  const int passes = static_cast<int>(std::max<std::size_t>(1, kBandwidthRunBytes / all));
  const std::size_t share = all / devices.size();
  const auto keep = [](double& field, double measured) { field = std::max(field, measured); };
  constexpr RunStatistic kMean = RunStatistic::kMean;
  best.bytes = static_cast<double>(all);
  for (StreamKernel k : {StreamKernel::kCopy, StreamKernel::kAdd}) {
    const bool add = k == StreamKernel::kAdd;
    keep(add ? best.reduce_one : best.copy_one,
         measure_stream_bandwidth(one, k, alone, iterations, passes, kMean));
    keep(add ? best.reduce_all : best.copy_all,
         measure_stream_bandwidth(devices, k, share, iterations, passes, kMean));
    if (peers.size() < 2) continue;
    keep(add ? best.reduce_peer_one : best.copy_peer_one,
         measure_peer_bandwidth(peers, k, all, iterations, true));
    keep(add ? best.reduce_peer_all : best.copy_peer_all,
         measure_peer_bandwidth(peers, k, all, iterations, false));
  }
}

std::string round_label(int round, int rounds) {
  return " (round " + std::to_string(round + 1) + " of " + std::to_string(rounds) + ")";
}

// One round of measure_memory_samples: each sample of `best` keeps the better of what it held
// and what this round measures. Its callers check the devices, iterations and rounds.
void measure_memory_round(const std::vector<Device*>& devices,
                          const std::vector<std::size_t>& working_sets,
                          std::size_t one_device_bytes, int iterations, int round, int rounds,
                          std::vector<timing::MemorySample>& best, const FitProgress& progress,
                          const StopRequested& stop) {
  const std::vector<Device*> one{devices.front()};
  const std::vector<Device*> peers = one_per_cpu(devices);
  best.resize(working_sets.size());
  if (progress) {
    progress("the memory's bandwidth over " + size_label(working_sets.front()) + " to " +
             size_label(working_sets.back()) + round_label(round, rounds));
  }
  for (std::size_t k = 0; k < working_sets.size() && !stopped(stop); ++k) {
    measure_memory_sample(devices, one, peers, working_sets[k], one_device_bytes, iterations,
                          best[k]);
  }
}

// The sizes no round reached (stopped) are left out.
std::vector<timing::MemorySample> measured_sizes(std::vector<timing::MemorySample> samples) {
  std::erase_if(samples, [](const timing::MemorySample& s) { return s.bytes == 0; });
  return samples;
}

// (algorithm, count, bytes) -> the best time of the rounds.
using BestTimes = std::map<std::tuple<std::string, int, std::size_t>, double>;

// One round of measure_all_reduce_samples, into `best`.
void measure_all_reduce_round(const std::vector<Device*>& devices,
                              const std::vector<std::string>& algorithms,
                              const std::vector<int>& device_counts,
                              const AllReduceBenchOptions& sweep, int round, int rounds,
                              BestTimes& best, const FitProgress& progress,
                              const StopRequested& stop) {
  for (int count : device_counts) {
    if (count < 1 || count > static_cast<int>(devices.size())) {
      throw std::invalid_argument("a sweep on " + std::to_string(count) + " devices, of " +
                                  std::to_string(devices.size()));
    }
    const std::vector<Device*> some(devices.begin(), devices.begin() + count);
    for (const std::string& name : algorithms) {
      const AllReduceAlgorithm* row = find_all_reduce(name);
      if (row == nullptr || row->schedule == nullptr || stopped(stop)) continue;
      std::unique_ptr<AllReduce> algorithm;
      try {
        algorithm = make_all_reduce(name, some);
      } catch (const AllReduceUnavailable&) {
        continue;
      }
      if (progress) {
        progress(name + " on " + std::to_string(count) + " devices, " +
                 size_label(sweep.min_bytes) + " to " + size_label(sweep.max_bytes) +
                 round_label(round, rounds));
      }
      run_allreduce_sweep(
          some, *algorithm, sweep, 0,
          [&](const AllReduceBenchRow& r) {
            if (r.wrong != 0) {
              throw std::runtime_error(name + " summed " + std::to_string(r.wrong) +
                                       " elements wrongly at " + size_label(r.bytes));
            }
            auto [at, inserted] = best.try_emplace({name, count, r.bytes}, r.seconds);
            if (!inserted) at->second = std::min(at->second, r.seconds);
          },
          stop);
    }
  }
}

std::vector<timing::AllReduceSample> samples_of(const BestTimes& best) {
  std::vector<timing::AllReduceSample> samples;
  for (const auto& [key, seconds] : best) {
    const auto& [name, count, bytes] = key;
    const AllReduceAlgorithm* row = find_all_reduce(name);
    samples.push_back({name, row->schedule(count, static_cast<double>(bytes), 0), seconds});
  }
  return samples;
}

}  // namespace

std::vector<timing::MemorySample> measure_memory_samples(
    const std::vector<Device*>& devices, const std::vector<std::size_t>& working_sets,
    std::size_t one_device_bytes, int iterations, int rounds, const FitProgress& progress,
    const StopRequested& stop) {
  if (devices.empty() || iterations < 1 || rounds < 1) {
    throw std::invalid_argument("measuring the memory needs devices and iterations");
  }
  std::vector<timing::MemorySample> samples;
  for (int round = 0; round < rounds && !stopped(stop); ++round) {
    measure_memory_round(devices, working_sets, one_device_bytes, iterations, round, rounds,
                         samples, progress, stop);
  }
  return measured_sizes(std::move(samples));
}

std::vector<timing::AllReduceSample> measure_all_reduce_samples(
    const std::vector<Device*>& devices, const std::vector<std::string>& algorithms,
    const std::vector<int>& device_counts, const AllReduceBenchOptions& sweep, int rounds,
    const FitProgress& progress, const StopRequested& stop) {
  BestTimes best;
  for (int round = 0; round < rounds && !stopped(stop); ++round) {
    measure_all_reduce_round(devices, algorithms, device_counts, sweep, round, rounds, best,
                             progress, stop);
  }
  return samples_of(best);
}

FitMeasurements measure_for_fit(const std::vector<Device*>& devices, const FitPlan& plan,
                                const FitProgress& progress, const StopRequested& stop) {
  if (devices.empty() || plan.memory_iterations < 1 || plan.rounds < 1) {
    throw std::invalid_argument("a fit needs devices, iterations and rounds");
  }
  std::vector<timing::MemorySample> memory;
  BestTimes latency, check;
  for (int round = 0; round < plan.rounds && !stopped(stop); ++round) {
    measure_memory_round(devices, plan.working_sets, plan.one_device_bytes, plan.memory_iterations,
                         round, plan.rounds, memory, progress, stop);
    measure_all_reduce_round(devices, plan.algorithms, plan.device_counts, plan.latency_sweep,
                             round, plan.rounds, latency, progress, stop);
    measure_all_reduce_round(devices, plan.algorithms, plan.device_counts, plan.check_sweep, round,
                             plan.rounds, check, progress, stop);
  }
  return {measured_sizes(std::move(memory)), samples_of(latency), samples_of(check)};
}

int engine_count(const std::vector<Device*>& devices) {
  if (devices.empty() || devices.front()->is_cuda()) return 0;
  const std::size_t bound = one_per_cpu(devices).size();
  if (bound > 0) return static_cast<int>(bound);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace mirrorlab::vgpu
