// `mirrorlab bench allreduce`: nccl-tests' all_reduce_perf for the algorithms on virtual GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/flags/cli_declarations.h"
#include "app/flags/device_flags.h"
#include "app/flags/sweep_flags.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::app {

struct BenchAllReduceOptions {
  DeviceFlags devices;
  SweepFlags sweep;
  std::vector<std::string> algorithms = vgpu::all_reduce_names();
  std::string op = "sum";
};

// Adds `bench` with its subcommand `allreduce`; returns the `allreduce` subcommand.
CLI::App* add_bench_command(CLI::App& app, BenchAllReduceOptions& options);
int run_bench_allreduce(const BenchAllReduceOptions& options);

}  // namespace mirrorlab::app
