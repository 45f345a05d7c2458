#include "virtualgpu/measure/all_reduce_bench.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::vgpu {
namespace {

// nccl-tests' trick: values whose sums are exact in any order (small integers), so the check
// can be bit for bit. Rank r, element i holds (r+1) * (1 + i % 7).
float input_value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(1 + i % 7));
}

// Rank r's crafted input, written into its buffer (host or device memory).
void fill_inputs(const std::vector<Device*>& devices, std::vector<std::span<float>>& buffers) {
  std::vector<float> values;
  for (std::size_t r = 0; r < buffers.size(); ++r) {
    values.resize(buffers[r].size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = input_value(static_cast<int>(r), i);
    write_buffer(*devices[r], buffers[r], values);
  }
}

std::size_t count_wrong(const std::vector<Device*>& devices,
                        const std::vector<std::span<float>>& buffers, ReduceOp op) {
  const int n = static_cast<int>(buffers.size());
  std::size_t wrong = 0;
  std::vector<float> result;
  for (std::size_t r = 0; r < buffers.size(); ++r) {
    result.resize(buffers[r].size());
    read_buffer(*devices[r], buffers[r], result);
    for (std::size_t i = 0; i < result.size(); ++i) {
      float expected = static_cast<float>(n * (n + 1) / 2 * static_cast<int>(1 + i % 7));
      if (op == ReduceOp::kMean) expected *= 1.0f / static_cast<float>(n);
      if (result[i] != expected) ++wrong;
    }
  }
  return wrong;
}

// `iterations`, or more where the warm-up says they would take less than `min_seconds` (at most
// 100 times more).
int iterations_for(const AllReduceBenchOptions& o, double warmup_seconds) {
  if (!(o.min_seconds > 0) || o.warmup_iterations < 1 || !(warmup_seconds > 0)) {
    return o.iterations;
  }
  const double each = warmup_seconds / o.warmup_iterations;
  const double wanted = std::ceil(o.min_seconds / each);
  return static_cast<int>(
      std::clamp(wanted, static_cast<double>(o.iterations), 100.0 * o.iterations));
}

}  // namespace

std::vector<std::size_t> sweep_sizes(const AllReduceBenchOptions& o) {
  if (o.min_bytes > o.max_bytes) {
    throw std::invalid_argument("the smallest size (" + std::to_string(o.min_bytes) +
                                " bytes) is larger than the largest (" +
                                std::to_string(o.max_bytes) + " bytes)");
  }
  if (!(o.step_factor > 1.0)) {
    throw std::invalid_argument("the step factor must be greater than 1");
  }
  std::vector<std::size_t> sizes;
  for (double s = static_cast<double>(std::max(o.min_bytes, sizeof(float)));
       s <= static_cast<double>(o.max_bytes) * (1 + 1e-9); s *= o.step_factor) {
    const std::size_t bytes = static_cast<std::size_t>(s) / sizeof(float) * sizeof(float);
    if (sizes.empty() || bytes != sizes.back()) sizes.push_back(bytes);
  }
  return sizes;
}

std::vector<AllReduceBenchRow> run_allreduce_sweep(
    const std::vector<Device*>& devices, const AllReduce& algorithm,
    const AllReduceBenchOptions& options, double bound_bandwidth,
    const std::function<void(const AllReduceBenchRow&)>& on_row,
    const std::function<bool()>& stop_requested) {
  if (options.iterations < 1) throw std::invalid_argument("iterations must be at least 1");
  if (options.warmup_iterations < 0) throw std::invalid_argument("warm-up iterations must be >= 0");
  const int n = static_cast<int>(devices.size());
  std::vector<AllReduceBenchRow> rows;
  for (std::size_t bytes : sweep_sizes(options)) {
    if (stop_requested && stop_requested()) break;
    const std::size_t count = bytes / sizeof(float);
    std::vector<Allocation> blocks;
    std::vector<std::span<float>> buffers;
    for (Device* d : devices) {
      blocks.push_back(d->memory().allocate(bytes, "all-reduce benchmark buffer"));
      buffers.emplace_back(blocks.back().as<float>(), count);
    }
    // Correctness first, on crafted inputs.
    fill_inputs(devices, buffers);
    all_reduce(devices, buffers, algorithm, options.op);
    AllReduceBenchRow row;
    row.algorithm = algorithm.name();
    row.bytes = bytes;
    row.count = count;
    row.wrong = count_wrong(devices, buffers, options.op);
    // Then time: warm-up, then `iterations` back to back (in place, as the data grows by a
    // factor of n each time it stays finite or turns to inf; neither slows float addition).
    fill_inputs(devices, buffers);
    const TimePoint warm = Clock::now();
    for (int it = 0; it < options.warmup_iterations; ++it) {
      all_reduce(devices, buffers, algorithm, options.op);
    }
    const int iterations = iterations_for(options, seconds_between(warm, Clock::now()));
    const TimePoint begin = Clock::now();
    for (int it = 0; it < iterations; ++it) {
      all_reduce(devices, buffers, algorithm, options.op);
    }
    row.seconds = seconds_between(begin, Clock::now()) / iterations;
    row.algbw = static_cast<double>(bytes) / row.seconds;
    row.busbw = n > 1 ? row.algbw * 2.0 * (n - 1) / n : row.algbw;
    if (bound_bandwidth > 0 && n > 1) {
      const double t_min = 2.0 * n * static_cast<double>(bytes) / bound_bandwidth;
      row.bound_fraction = t_min / row.seconds;
      row.own_bound_fraction = algorithm.bytes_moved(n, bytes) / bound_bandwidth / row.seconds;
    }
    if (on_row) on_row(row);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace mirrorlab::vgpu
