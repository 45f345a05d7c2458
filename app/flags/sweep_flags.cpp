#include "app/flags/sweep_flags.h"

#include <algorithm>

#include "CLI/CLI.hpp"
#include "app/flags/flags.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::app {

vgpu::AllReduceBenchOptions SweepFlags::options(vgpu::ReduceOp op) const {
  return {min_bytes, max_bytes, step_factor, iterations, warmup_iterations, op};
}

void add_sweep_flags(CLI::App* cmd, SweepFlags& f, const std::string& min_examples,
                     const std::string& max_examples) {
  // Sizes count float32 elements: a multiple of 4 bytes, at most the largest memory limit.
  const std::uint64_t largest = std::uint64_t{kMaxMemoryLimitMib} << 20;
  add_bytes_flag(cmd, "-b,--minbytes", f.min_bytes, 4, largest, 4,
                 "Smallest size per replica (e.g. " + min_examples + ")");
  add_bytes_flag(cmd, "-e,--maxbytes", f.max_bytes, 4, largest, 4,
                 "Largest size per replica (e.g. " + max_examples + ")");
  add_real_flag(cmd, "-f,--stepfactor", f.step_factor, 1.01, 1024.0,
                "Multiply the size by this between rows");
  add_whole_number_flag(cmd, "-n,--iters", f.iterations, 1, 100000, "Timed iterations per size");
  add_whole_number_flag(cmd, "-w,--warmup_iters", f.warmup_iterations, 0, 100000,
                        "Untimed iterations first");
}

std::int64_t smallest_memory_limit_mib(const DeviceFlags& devices, int gpus) {
  std::int64_t smallest = memory_limit_mib(devices, 0);
  for (int i = 1; i < gpus; ++i) smallest = std::min(smallest, memory_limit_mib(devices, i));
  return smallest;
}

std::string sweep_problem(const SweepFlags& f, const DeviceFlags& devices, int gpus,
                          int buffers_per_device) {
  if (f.min_bytes > f.max_bytes) {
    return "-b/--minbytes (" + std::to_string(f.min_bytes) + ") is larger than -e/--maxbytes (" +
           std::to_string(f.max_bytes) + ")";
  }
  const std::int64_t smallest = smallest_memory_limit_mib(devices, gpus);
  // Checked again, exactly, by each device's arena; this catches the common mistake early.
  const std::uint64_t needed = f.max_bytes * static_cast<std::uint64_t>(buffers_per_device);
  if (needed > static_cast<std::uint64_t>(smallest) * vgpu::kMiB) {
    std::string buffers = buffers_per_device == 1 ? "" : " (" + std::to_string(buffers_per_device);
    if (!buffers.empty()) buffers.append(" buffers of it)");
    return "-e/--maxbytes " + std::to_string(f.max_bytes) + buffers + " does not fit in a " +
           std::to_string(smallest) + " MiB device: lower -e or raise --memory-limit";
  }
  return "";
}

}  // namespace mirrorlab::app
