// The size-sweep flags `bench allreduce` and `compare` share, as nccl-tests' all_reduce_perf
// spells them (-b, -e, -f, -n, -w), and their check against the devices' memory.
#pragma once

#include <cstdint>
#include <string>

#include "app/flags/cli_declarations.h"
#include "app/flags/device_flags.h"
#include "virtualgpu/measure/all_reduce_bench.h"

namespace mirrorlab::app {

struct SweepFlags {
  std::uint64_t min_bytes = 1024;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  double step_factor = 2.0;
  int iterations = 20;
  int warmup_iterations = 5;
  vgpu::AllReduceBenchOptions options(vgpu::ReduceOp op = vgpu::ReduceOp::kSum) const;
};

// `examples`: sizes to show in -b's and -e's help ("e.g. 8, 1K, 4M", "e.g. 64M, 1G").
void add_sweep_flags(CLI::App* command, SweepFlags& flags, const std::string& min_examples,
                     const std::string& max_examples);

// The smallest memory limit of the `gpus` devices, MiB.
std::int64_t smallest_memory_limit_mib(const DeviceFlags& devices, int gpus);

// "" or why the sweep cannot run on `gpus` devices of `devices`: -b above -e, or
// `buffers_per_device` buffers of -e not fitting the smallest device (0: sizes only).
std::string sweep_problem(const SweepFlags& flags, const DeviceFlags& devices, int gpus,
                          int buffers_per_device);

}  // namespace mirrorlab::app
