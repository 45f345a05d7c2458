// The all-reduce across workers against plain MPI_Allreduce of the same bytes on the same ranks
// (issue 17: our overhead at most 10% from 4 MiB up). Run it under mpirun:
//   mpirun --oversubscribe -np 2 build/bench/bench_workers_all_reduce [-b 1M] [-e 64M] [-n 20]
// For each size, interleaved, the median of n timed iterations (each after a barrier) of:
//   mpi      MPI_Allreduce alone, in place, on the group's communicator;
//   group    MpiWorkerGroup::all_reduce_sum: the same call with the watch around it;
//   step     the whole hierarchical all-reduce as training runs it, on 1 CPU virtual GPU per
//            worker: the device thread, the collective group's barriers, the step across workers
//            (which calls the group) and the step back to the devices.
// It prints the machine and its load average at the start and the end (measure on a quiet one).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "virtualgpu/collectives/ring_all_reduce.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/mpi/mpi_worker_group.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace {

using namespace mirrorlab;

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::size_t parse_size(const char* text) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  const std::string unit = end;
  const double scale = unit == "K"   ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : 1.0;
  if (!(value > 0) || !(unit.empty() || scale > 1)) {
    std::fprintf(stderr, "bench_workers_all_reduce: '%s' is not a size (4096, 64K, 4M, 1G)\n",
                 text);
    std::exit(2);
  }
  return static_cast<std::size_t>(value * scale);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t min_bytes = 1 << 20, max_bytes = 64 << 20;
  int iterations = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-b")
      min_bytes = parse_size(argv[i + 1]);
    else if (flag == "-e")
      max_bytes = parse_size(argv[i + 1]);
    else if (flag == "-n")
      iterations = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "bench_workers_all_reduce: unknown flag %s (-b, -e, -n)\n", argv[i]);
      return 2;
    }
  }
  const std::string load_before = load_average();
  vgpu::MpiWorkerGroup group(std::chrono::seconds(120), [](const vgpu::WorkerLoss& loss) {
    std::fprintf(stderr, "bench_workers_all_reduce: %s\n", loss.sentence.c_str());
    _exit(1);
  });
  const bool chief = group.rank() == 0;
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, (2 * max_bytes >> 20) + 64);
  const std::vector<vgpu::Device*>& devices = registry.logical_devices();
  const vgpu::HierarchicalAllReduce step(std::make_unique<vgpu::RingAllReduce>(), group);
  if (chief) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::printf("# all-reduce across %d workers (%s) on %s, %u cores; load average %s\n",
                group.size(), vgpu::mpi_library_version().c_str(), host,
                std::thread::hardware_concurrency(), load_before.c_str());
    std::printf("# median of %d iterations per size, each after MPI_Barrier; sum of floats\n",
                iterations);
    std::printf("%12s %10s %10s %10s %9s %9s\n", "bytes", "mpi ms", "group ms", "step ms",
                "group +%", "step +%");
  }
  for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
    vgpu::Allocation block = devices[0]->memory().allocate(count * sizeof(float), "bench");
    const std::span<float> values(block.as<float>(), count);
    std::vector<double> mpi, ours, whole;
    for (int it = -2; it < iterations; ++it) {  // 2 warm-up rounds
      for (int kind = 0; kind < 3; ++kind) {
        std::fill(values.begin(), values.end(), 1.0f);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        if (kind == 0) group.plain_mpi_allreduce(values);
        if (kind == 1) group.all_reduce_sum(values);
        if (kind == 2) vgpu::all_reduce(devices, {values}, step, vgpu::ReduceOp::kSum);
        const double seconds = MPI_Wtime() - start;
        if (values[count - 1] != static_cast<float>(group.size())) {
          std::fprintf(stderr, "bench_workers_all_reduce: wrong sum %g at %zu bytes\n",
                       values[count - 1], bytes);
          return 1;
        }
        if (it >= 0) (kind == 0 ? mpi : kind == 1 ? ours : whole).push_back(seconds);
      }
    }
    if (chief) {
      const double m = median(mpi), g = median(ours), w = median(whole);
      std::printf("%12zu %10.3f %10.3f %10.3f %+9.1f %+9.1f\n", bytes, 1e3 * m, 1e3 * g, 1e3 * w,
                  100 * (g / m - 1), 100 * (w / m - 1));
      std::fflush(stdout);
    }
  }
  if (chief) std::printf("# load average at the end %s\n", load_average().c_str());
  group.finish();
  vgpu::finalize_mpi();
  return 0;
}
