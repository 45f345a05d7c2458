#include "virtualgpu/stream_bandwidth.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

#include "virtualgpu/device.h"
#include "virtualgpu/device_buffers.h"

namespace mirrorlab::vgpu {

const char* to_string(StreamKernel kernel) {
  return kernel == StreamKernel::kAdd ? "add (b += a)" : "copy (b = a)";
}

double measure_stream_bandwidth(const std::vector<Device*>& devices, StreamKernel kernel,
                                std::size_t bytes, int iterations, int passes) {
  if (devices.empty() || iterations < 1 || passes < 1 || bytes < 2 * sizeof(float)) {
    throw std::invalid_argument("measuring the memory bandwidth needs devices, bytes and "
                                "iterations");
  }
  const bool add = kernel == StreamKernel::kAdd;
  if (devices[0]->is_cuda()) return measure_cuda_stream_bandwidth(devices, bytes, iterations, add);
  const std::size_t count = bytes / 2 / sizeof(float);
  std::vector<Allocation> blocks;
  for (Device* d : devices) blocks.push_back(d->memory().allocate(2 * count * sizeof(float),
                                                                   "memory-bandwidth buffers"));
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
  double best = 0;
  for (int it = 0; it < iterations; ++it) {
    const TimePoint begin = Clock::now();
    run_all();
    const double seconds = seconds_between(begin, Clock::now());
    if (it == 0 || seconds < best) best = seconds;
  }
  if (!(best > 0)) throw std::runtime_error("the bandwidth kernels took no measurable time");
  return (add ? 3.0 : 2.0) * static_cast<double>(count * sizeof(float)) *
         static_cast<double>(devices.size()) * passes / best;
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
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                     "/size");
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
