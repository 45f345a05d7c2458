// What `mirrorlab compare` measures on the devices at hand to fit the model, for timing/fit.h: the
// memory's copy and add bandwidth at each size (one device alone, then all at once, STREAM-style as
// stream_bandwidth.h measures B), and all-reduce sweeps of mirrorlab's algorithms (the harness of
// `bench allreduce`), each sweep's rows turned into samples with the algorithm's schedule.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "timing/fit.h"
#include "virtualgpu/measure/all_reduce_bench.h"

namespace mirrorlab::vgpu {

class Device;

// Asked before each measurement; true stops there (what was measured is returned).
using StopRequested = std::function<bool()>;
// Told what is being measured, as a line ("memory at 4.0 MiB per device").
using FitProgress = std::function<void(const std::string&)>;

// The memory samples at each of `working_sets` (bytes of the one memory in all): a copy (b = a)
// and an add (b += a) kernel over the working set, on devices[0] alone (over at most
// `one_device_bytes` of it: a device cannot hold more) and on every device at once (each over
// its share); where the devices are bound to CPUs, the same kernels reading another engine's
// writes too (measure_peer_bandwidth, one device per CPU). Each is the mean of `iterations` runs
// (each run passing over a small working set several times, so that it takes about as long as a
// large one), as the all-reduces it will predict are timed. Every size is measured `rounds`
// times, the rounds spread over the whole measurement, and keeps its best round: what another
// program on the machine takes for a moment favours no size.
std::vector<timing::MemorySample> measure_memory_samples(
    const std::vector<Device*>& devices, const std::vector<std::size_t>& working_sets,
    std::size_t one_device_bytes, int iterations, int rounds, const FitProgress& progress = {},
    const StopRequested& stop = {});

// For each of `device_counts` (the first k devices) and each algorithm of `algorithms` that can
// run there, a sweep; the sweeps run `rounds` times, interleaved (every algorithm and count once
// per round), and each size keeps its best round, so a noisy machine favours none. An algorithm
// without a schedule (nccl) is skipped.
std::vector<timing::AllReduceSample> measure_all_reduce_samples(
    const std::vector<Device*>& devices, const std::vector<std::string>& algorithms,
    const std::vector<int>& device_counts, const AllReduceBenchOptions& sweep, int rounds,
    const FitProgress& progress = {}, const StopRequested& stop = {});

// What a fit of the model measures, round by round: in each round the memory at every
// working set, the all-reduces the latencies are fitted to (small sizes), and those the fitted
// model is then checked against, one after the other, so that each keeps its best round from the
// same minutes as the others (on a machine shared with other programs, the caches and the
// memory's bandwidth a measurement gets change from one minute to the next).
struct FitPlan {
  std::vector<std::size_t> working_sets;
  std::size_t one_device_bytes = 0;
  int memory_iterations = 10;
  std::vector<std::string> algorithms;
  std::vector<int> device_counts;
  AllReduceBenchOptions latency_sweep, check_sweep;
  int rounds = 3;
};
struct FitMeasurements {
  std::vector<timing::MemorySample> memory;
  std::vector<timing::AllReduceSample> latency, check;
};
FitMeasurements measure_for_fit(const std::vector<Device*>& devices, const FitPlan& plan,
                                const FitProgress& progress = {}, const StopRequested& stop = {});

// The engines that run the kernels at once: for CPU virtual GPUs, the CPUs they are bound to
// (this CPU's cores when they are not bound); 0 (one per device) for CUDA devices.
int engine_count(const std::vector<Device*>& devices);

}  // namespace mirrorlab::vgpu
