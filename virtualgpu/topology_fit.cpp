#include "virtualgpu/topology_fit.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/device.h"
#include "virtualgpu/memory/memory_arena.h"
#include "virtualgpu/stream_bandwidth.h"

namespace mirrorlab::vgpu {
namespace {

bool stopped(const StopRequested& stop) { return stop && stop(); }

}  // namespace

std::vector<timing::MemorySample> measure_memory_samples(const std::vector<Device*>& devices,
                                                         const std::vector<std::size_t>& working_sets,
                                                         std::size_t one_device_bytes,
                                                         int iterations,
                                                         const FitProgress& progress,
                                                         const StopRequested& stop) {
  if (devices.empty() || iterations < 1) {
    throw std::invalid_argument("measuring the memory needs devices and iterations");
  }
  const std::vector<Device*> one{devices.front()};
  const std::size_t minimum = 2 * sizeof(float) * devices.size();
  std::vector<timing::MemorySample> samples;
  for (std::size_t bytes : working_sets) {
    if (stopped(stop)) break;
    if (progress) progress("the memory's bandwidth over " + size_label(bytes));
    const std::size_t all = std::max(bytes, minimum);
    const std::size_t alone = std::min(all, one_device_bytes);
    // Each run passes over a small working set several times (at least 32 MiB in all), so that
    // handing the run to the devices is nothing beside it.
    const int passes = static_cast<int>(std::max<std::size_t>(1, (std::size_t{32} << 20) / all));
    const std::size_t share = all / devices.size();
    timing::MemorySample s;
    s.bytes = static_cast<double>(all);
    s.copy_one = measure_stream_bandwidth(one, StreamKernel::kCopy, alone, iterations, passes);
    s.reduce_one = measure_stream_bandwidth(one, StreamKernel::kAdd, alone, iterations, passes);
    s.copy_all = measure_stream_bandwidth(devices, StreamKernel::kCopy, share, iterations, passes);
    s.reduce_all = measure_stream_bandwidth(devices, StreamKernel::kAdd, share, iterations, passes);
    samples.push_back(s);
  }
  return samples;
}

std::vector<timing::AllReduceSample> measure_all_reduce_samples(
    const std::vector<Device*>& devices, const std::vector<std::string>& algorithms,
    const std::vector<int>& device_counts, const AllReduceBenchOptions& sweep, int rounds,
    const FitProgress& progress, const StopRequested& stop) {
  // (algorithm, count, bytes) -> the best time of the rounds.
  std::map<std::tuple<std::string, int, std::size_t>, double> best;
  for (int round = 0; round < rounds && !stopped(stop); ++round) {
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
                   " (round " + std::to_string(round + 1) +
                   " of " + std::to_string(rounds) + ")");
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
  std::vector<timing::AllReduceSample> samples;
  for (const auto& [key, seconds] : best) {
    const auto& [name, count, bytes] = key;
    const AllReduceAlgorithm* row = find_all_reduce(name);
    samples.push_back({name, row->schedule(count, static_cast<double>(bytes), 0), seconds});
  }
  return samples;
}

int engine_count(const std::vector<Device*>& devices) {
  if (devices.empty() || devices.front()->is_cuda()) return 0;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace mirrorlab::vgpu
