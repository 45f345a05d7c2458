#include "app/compare/bench_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>

#include "CLI/CLI.hpp"
#include "app/compare/compare_tables.h"
#include "app/flags/flags.h"
#include "app/output/interrupt.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/measure/all_reduce_bench.h"
#include "virtualgpu/measure/stream_bandwidth.h"

namespace mirrorlab::app {

CLI::App* add_bench_command(CLI::App& app, BenchAllReduceOptions& o) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Benchmarks on these devices: allreduce, each all-reduce algorithm over a size sweep");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand(
      "allreduce",
      "All-reduce bandwidth over a size sweep, like nccl-tests' all_reduce_perf: size, count, "
      "time, algbw, busbw, #wrong, and each time against the single-memory bound 2*N*S/B");
  add_device_flags(cmd, o.devices);
  add_sweep_flags(cmd, o.sweep, "8, 1K, 4M", "64M, 1G");
  add_choice_list_flag(cmd, "--algorithms", o.algorithms, vgpu::all_reduce_names(),
                       "Comma-separated, of " + vgpu::all_reduce_name_list("and") +
                           " (one that cannot run on these devices is listed, saying why)");
  add_choice_flag(cmd, "-o,--op", o.op, {"sum", "mean"}, "Reduction: sum or mean");
  return cmd;
}

int run_bench_allreduce(const BenchAllReduceOptions& o) {
  auto bad_input = [](const std::string& problem) {
    std::fprintf(stderr,
                 "mirrorlab bench allreduce: %s\nRun 'mirrorlab bench allreduce --help' for the "
                 "flags.\n",
                 problem.c_str());
    return 2;
  };
  const vgpu::AllReduceBenchOptions sweep =
      o.sweep.options(o.op == "mean" ? vgpu::ReduceOp::kMean : vgpu::ReduceOp::kSum);
  std::string problem;
  const int gpus = all_reduce_device_count(o.devices, &problem);
  if (problem.empty()) problem = sweep_problem(o.sweep, o.devices, gpus, 1);
  if (!problem.empty()) return bad_input(problem);

  vgpu::DeviceRegistry registry;
  registry.set_bind_threads_to_cpus(true);  // a measurement: every device on a core of its own
  const std::vector<vgpu::Device*>& devices = make_devices(plan_devices(o.devices, gpus), registry);
  // B is measured on the largest size the devices hold (past the caches where it can be): a
  // working set of at least 64 MiB per device, at most half the smallest device.
  const std::size_t bound_bytes = std::min<std::size_t>(
      std::max<std::size_t>(sweep.max_bytes, std::size_t{64} << 20),
      static_cast<std::size_t>(smallest_memory_limit_mib(o.devices, gpus)) * vgpu::kMiB / 2);
  print_comment(formatted("Measuring the memory's bandwidth B (%.1f MiB per device, copy and add "
                          "kernels on every device at once, the best of 5) ...",
                          static_cast<double>(bound_bytes) / vgpu::kMiB),
                "# ");
  std::fflush(stdout);
  const vgpu::MemoryBound bound = vgpu::measure_memory_bound(devices, bound_bytes, 5);
  // The same kernels at each size, once for every algorithm: which sizes run in the caches.
  std::set<std::size_t> cached_sizes;
  for (std::size_t bytes : vgpu::sweep_sizes(sweep)) {
    if (interrupt_signal() == 0 && vgpu::fits_in_caches(devices, bytes, bound)) {
      cached_sizes.insert(bytes);
    }
  }
  std::printf("# B = %.2f GB/s (%s, read + written)\n", bound.bandwidth / 1e9,
              vgpu::to_string(bound.kernel));
  if (bound.cache_bytes > 0 && !bound.past_caches()) {
    print_comment(
        formatted("The CPU's largest cache holds %.0f MiB: B's working set (%.0f MiB) is not twice "
                  "that, so B may be a cache's, not main memory's (raise --memory-limit and -e)",
                  static_cast<double>(bound.cache_bytes) / vgpu::kMiB,
                  static_cast<double>(bound.bytes_per_device * bound.devices) / vgpu::kMiB),
        "# ");
  }
  print_comment(
      "All replicas share one memory, so an all-reduce of S bytes per replica needs at least "
      "T_min = 2*N*S/B (each byte read once and written once).",
      "# ");
  print_comment("%bound = T_min / time; %own = (the bytes the algorithm itself moves)/B / time.",
                "# ");
  print_comment(
      "A size marked 'cache' runs faster than B in the same kernels: it fits in the caches, and "
      "may pass 100%.",
      "# ");
  std::printf("#\n");
  std::size_t total_wrong = 0;
  for (const std::string& name : o.algorithms) {
    if (interrupt_signal() != 0) break;
    std::unique_ptr<vgpu::AllReduce> algorithm;
    try {
      algorithm = vgpu::make_all_reduce(name, devices);
    } catch (const std::invalid_argument& e) {
      // NCCL on CPU-backed or shared GPUs, or not built: listed, not run.
      print_comment(name + " on " + std::to_string(gpus) + " devices: skipped: " + e.what(), "# ");
      std::printf("#\n");
      continue;
    }
    std::printf("# %s on %d devices, op %s, %d iterations after %d warm-up\n", name.c_str(), gpus,
                o.op.c_str(), sweep.iterations, sweep.warmup_iterations);
    std::printf("%12s %12s %6s %6s %11s %9s %9s %7s %7s %7s\n", "size", "count", "type", "redop",
                "time(us)", "algbw", "busbw", "#wrong", "%bound", "%own");
    std::printf("%12s %12s %6s %6s %11s %9s %9s %7s %7s %7s\n", "(B)", "(elements)", "", "", "",
                "(GB/s)", "(GB/s)", "", "", "");
    vgpu::run_allreduce_sweep(
        devices, *algorithm, sweep, bound.bandwidth,
        [&](const vgpu::AllReduceBenchRow& row) {
          std::printf("%12zu %12zu %6s %6s %11.1f %9.2f %9.2f %7zu %6.1f%% %6.1f%%%s\n", row.bytes,
                      row.count, "float", o.op.c_str(), row.seconds * 1e6, row.algbw / 1e9,
                      row.busbw / 1e9, row.wrong, 100.0 * row.bound_fraction,
                      100.0 * row.own_bound_fraction,
                      cached_sizes.count(row.bytes) ? "  cache" : "");
          std::fflush(stdout);
          total_wrong += row.wrong;
        },
        [] { return interrupt_signal() != 0; });
    std::printf("#\n");
  }
  std::printf("# Out of bounds values : %zu %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
  if (const int signal = interrupt_signal(); signal != 0) {
    std::printf("# Interrupted by %s: the rows above are complete, the rest was not measured\n",
                interrupt_name(signal));
    return interrupt_exit_status(signal);
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace mirrorlab::app
