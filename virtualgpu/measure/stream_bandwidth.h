// The memory's bandwidth, measured STREAM-style with the access patterns of the all-reduces
// (b = a as their copies, b += a as their reduces), every device at once on memory of its own:
// the bound `bench allreduce` puts each time against, and the bandwidth the timing model is fitted
// with (timing/topology.h's MemorySpec).
#pragma once

#include <cstddef>
#include <vector>

namespace mirrorlab::vgpu {

class Device;

enum class StreamKernel { kCopy, kAdd };
const char* to_string(StreamKernel kernel);  // "copy (b = a)", "add (b += a)"

// What a measurement makes of its timed runs: the fastest (as STREAM reports: a ceiling), or
// their mean (as an all-reduce's time is measured: what a model fitted to predict those wants).
enum class RunStatistic { kFastest, kMean };

// Bytes read plus written per second when every one of `devices` runs `kernel` over a working
// set of `bytes` of its own memory (two halves, a and b), all at once: the fastest or the mean of
// `iterations` timed runs after one warm-up (CUDA: always the mean, timed with events). Each run
// passes over the buffers `passes` times (CPU devices), so that a run of a small working set lasts
// long enough that handing it to the devices costs nothing beside it.
double measure_stream_bandwidth(const std::vector<Device*>& devices, StreamKernel kernel,
                                std::size_t bytes, int iterations, int passes = 1,
                                RunStatistic statistic = RunStatistic::kFastest);

// The fit's kernels pass over a working set this many bytes' worth at least in each timed run, so
// that handing the run to the devices' threads and waiting for them (tens of microseconds) is
// nothing beside it.
constexpr std::size_t kBandwidthRunBytes = std::size_t{256} << 20;

// The same kernels reading what another device has just written, as the all-reduces do (a
// ring's step reads the chunk its left neighbour wrote in the step before; reduce-to-one's
// broadcast reads the sum its destination wrote): on a CPU those bytes sit in another core's
// private cache, or in a cache they share, not in the reader's own. Every device at once
// (`one_reader` false): in pass p, device i sets one of its two buffers from its right
// neighbour's other buffer, written in pass p-1. One reader: a ping-pong, in turn /gpu:1 copies
// device 0's buffer into its own and device 0 runs the kernel from it back into its own (as
// reduce-to-one's broadcast and reduce do), and only device 0's passes count. The devices wait
// for each other between passes at the barrier the all-reduces use, and only the kernels are
// timed. Bytes read plus written per second by the readers over the mean of `iterations` runs
// (as measure_stream_bandwidth with kMean); `bytes` is the working set of all the devices
// together. 0 for CUDA devices.
double measure_peer_bandwidth(const std::vector<Device*>& devices, StreamKernel kernel,
                              std::size_t bytes, int iterations, bool one_reader);

// The memory bound B: the best of the copy and add kernels on all devices at `bytes` each.
struct MemoryBound {
  double bandwidth = 0;                       // bytes/s, read plus written
  StreamKernel kernel = StreamKernel::kCopy;  // the faster one
  std::size_t bytes_per_device = 0;
  std::size_t cache_bytes = 0;  // the CPU's largest cache (0: unknown, or CUDA devices)
  // The working set (all devices) is at least twice the largest cache: B is main memory's.
  bool past_caches() const;
  std::size_t devices = 0;
};
MemoryBound measure_memory_bound(const std::vector<Device*>& devices, std::size_t bytes,
                                 int iterations);

// Whether `bytes` per device fit in the caches: the bound's kernels run there more than 15%
// faster than `bound` (measured at `bytes`, at least two floats, the best of 3).
bool fits_in_caches(const std::vector<Device*>& devices, std::size_t bytes,
                    const MemoryBound& bound);

// The largest cache of this machine's CPU, in bytes, from Linux's sysfs (0 when unknown).
std::size_t largest_cpu_cache_bytes();

}  // namespace mirrorlab::vgpu
