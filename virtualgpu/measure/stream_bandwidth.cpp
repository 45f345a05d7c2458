#include "virtualgpu/measure/stream_bandwidth.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "virtualgpu/devices/barrier.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::vgpu {

const char* to_string(StreamKernel kernel) {
  return kernel == StreamKernel::kAdd ? "add (b += a)" : "copy (b = a)";
}

double measure_stream_bandwidth(const std::vector<Device*>& devices, StreamKernel kernel,
                                std::size_t bytes, int iterations, int passes,
                                RunStatistic statistic) {
  if (devices.empty() || iterations < 1 || passes < 1 || bytes < 2 * sizeof(float)) {
    throw std::invalid_argument(
        "measuring the memory bandwidth needs devices, bytes and "
        "iterations");
  }
  const bool add = kernel == StreamKernel::kAdd;
  if (devices[0]->is_cuda()) return measure_cuda_stream_bandwidth(devices, bytes, iterations, add);
  const std::size_t count = bytes / 2 / sizeof(float);
  std::vector<Allocation> blocks;
  for (Device* d : devices)
    blocks.push_back(d->memory().allocate(2 * count * sizeof(float), "memory-bandwidth buffers"));
  for (Allocation& b : blocks) std::fill_n(b.as<float>(), 2 * count, 1.0f);
  // The loops of the host transport (transport.cpp): std::copy for a copy, a plain loop the
  // compiler vectorizes for a reduce.
  const auto run_all = [&] {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      float* a = blocks[i].as<float>();
      devices[i]->stream().enqueue([a, count, add, passes] {
        float* b = a + count;
        for (int pass = 0; pass < passes; ++pass) {
          if (add) {
            for (std::size_t k = 0; k < count; ++k) b[k] += a[k];
          } else {
            std::copy(a, a + count, b);
          }
        }
      });
    }
    for (Device* d : devices) d->stream().synchronize();
  };
  run_all();  // warm-up
  double best = 0, sum = 0;
  for (int it = 0; it < iterations; ++it) {
    const TimePoint begin = Clock::now();
    run_all();
    const double seconds = seconds_between(begin, Clock::now());
    sum += seconds;
    if (it == 0 || seconds < best) best = seconds;
  }
  if (statistic == RunStatistic::kMean) best = sum / iterations;
  if (!(best > 0)) throw std::runtime_error("the bandwidth kernels took no measurable time");
  return (add ? 3.0 : 2.0) * static_cast<double>(count * sizeof(float)) *
         static_cast<double>(devices.size()) * passes / best;
}

double measure_peer_bandwidth(const std::vector<Device*>& devices, StreamKernel kernel,
                              std::size_t bytes, int iterations, bool one_reader) {
  const std::size_t n = devices.size();
  if (n < 2 || iterations < 1) {
    throw std::invalid_argument("measuring reads of another device's writes needs two devices");
  }
  if (devices[0]->is_cuda()) return 0;
  // Every device: two buffers each, all of them in every pass. One reader: one buffer on each
  // of the two devices.
  const std::size_t buffers = one_reader ? 2 : 2 * n;
  const std::size_t count = std::max<std::size_t>(1, bytes / buffers / sizeof(float));
  const bool add = kernel == StreamKernel::kAdd;
  // Passes enough that a run passes over kBandwidthRunBytes, and even, so that every run starts
  // where the last one left off.
  const std::size_t run_bytes = buffers * count * sizeof(float);
  int passes = static_cast<int>(std::max<std::size_t>(2, kBandwidthRunBytes / run_bytes));
  passes += passes % 2;
  const std::size_t per_device = one_reader ? count : 2 * count;
  std::vector<Allocation> blocks;
  for (std::size_t i = 0; i < (one_reader ? 2 : n); ++i) {
    blocks.push_back(
        devices[i]->memory().allocate(per_device * sizeof(float), "memory-bandwidth buffers"));
    std::fill_n(blocks.back().as<float>(), per_device, 1.0f);
  }
  // Buffer `which` (mod 2) of a device; one reader: the device's one buffer.
  const auto half = [&](std::size_t device, int which) {
    return blocks[device].as<float>() + (!one_reader && which % 2 ? count : 0);
  };
  const auto kernel_pass = [add, count](const float* src, float* dst) {
    if (add) {
      for (std::size_t k = 0; k < count; ++k) dst[k] += src[k];
    } else {
      std::copy(src, src + count, dst);
    }
  };
  // The devices meet between passes at the barrier the all-reduces use between their steps, so
  // that the bytes sit where an all-reduce's next step finds them (the waiting threads sleep, as
  // they do there), and only the kernels are timed: seconds[p][i], device i's pass p.
  const std::size_t parties = one_reader ? 2 : n;
  std::vector<std::vector<double>> seconds(static_cast<std::size_t>(passes),
                                           std::vector<double>(parties, 0.0));
  const auto run = [&] {
    CancellableBarrier barrier(static_cast<int>(parties));
    for (std::size_t i = 0; i < parties; ++i) {
      devices[i]->stream().enqueue([&, i] {
        const std::size_t right = (i + 1) % n;
        for (int p = 0; p < passes; ++p) {
          const TimePoint begin = Clock::now();
          if (one_reader) {
            // A ping-pong: even passes, /gpu:1 copies device 0's buffer into its own; odd
            // ones, device 0 runs the kernel from /gpu:1's buffer into its own, as
            // reduce-to-one's broadcast and reduce do.
            if (p % 2 == 0 && i == 1) std::copy(half(0, 0), half(0, 0) + count, half(1, 0));
            if (p % 2 == 1 && i == 0) kernel_pass(half(1, 0), half(0, 0));
          } else {
            // Pass p reads the right neighbour's buffer p % 2 (its pass p-1 wrote it) and
            // writes this device's other buffer (its left neighbour's pass p-1 read it).
            kernel_pass(half(right, p), half(i, p + 1));
          }
          seconds[static_cast<std::size_t>(p)][i] = seconds_between(begin, Clock::now());
          barrier.arrive_and_wait();
        }
      });
    }
    for (std::size_t i = 0; i < parties; ++i) devices[i]->stream().synchronize();
    // One reader: device 0's passes. Every device: each pass takes its slowest device.
    double total = 0;
    for (int p = one_reader ? 1 : 0; p < passes; p += one_reader ? 2 : 1) {
      const std::vector<double>& pass = seconds[static_cast<std::size_t>(p)];
      total += one_reader ? pass[0] : *std::max_element(pass.begin(), pass.end());
    }
    return total;
  };
  run();  // warm-up
  double sum = 0;
  for (int it = 0; it < iterations; ++it) sum += run();
  const double mean = sum / iterations;
  if (!(mean > 0)) throw std::runtime_error("the bandwidth kernels took no measurable time");
  const double readers = one_reader ? 1.0 : static_cast<double>(n);
  const double reads = one_reader ? passes / 2.0 : passes;
  return (add ? 3.0 : 2.0) * static_cast<double>(count * sizeof(float)) * readers * reads / mean;
}

bool MemoryBound::past_caches() const {
  return cache_bytes > 0 && bytes_per_device * devices >= 2 * cache_bytes;
}

MemoryBound measure_memory_bound(const std::vector<Device*>& devices, std::size_t bytes,
                                 int iterations) {
  MemoryBound b;
  b.bytes_per_device = bytes;
  b.devices = devices.size();
  b.cache_bytes = devices.empty() || devices[0]->is_cuda() ? 0 : largest_cpu_cache_bytes();
  for (StreamKernel k : {StreamKernel::kCopy, StreamKernel::kAdd}) {
    const double bw = measure_stream_bandwidth(devices, k, bytes, iterations);
    if (bw > b.bandwidth) {
      b.bandwidth = bw;
      b.kernel = k;
    }
  }
  return b;
}

bool fits_in_caches(const std::vector<Device*>& devices, std::size_t bytes,
                    const MemoryBound& bound) {
  const std::size_t at_least = std::max(bytes, 2 * sizeof(float));
  return measure_memory_bound(devices, at_least, 3).bandwidth > 1.15 * bound.bandwidth;
}

std::size_t largest_cpu_cache_bytes() {
  std::size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    std::size_t value = 0;
    try {
      value = std::stoul(text);
    } catch (const std::exception&) {
      continue;
    }
    const char unit = text.back();
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    if (unit == 'G') value <<= 30;
    largest = std::max(largest, value);
  }
  return largest;
}

}  // namespace mirrorlab::vgpu
