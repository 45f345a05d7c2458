// The harness of `mirrorlab bench allreduce`, modelled on nccl-tests' all_reduce_perf: a sweep of
// sizes, warm-up and timed iterations, algbw/busbw, and a bit-exact check (#wrong). Each time
// can be put against the bound T_min = 2*N*S/B of an all-reduce whose N buffers of S bytes share
// one memory (every byte read once and written once), B measured STREAM-style past the caches
// (stream_bandwidth.h, which also says whether a size runs in the caches). The GUI's Compare
// panel runs the same code.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

class Device;

struct AllReduceBenchOptions {
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{64} << 20;
  double step_factor = 2.0;  // sizes min, min*f, min*f^2, ... up to max
  int iterations = 20;
  int warmup_iterations = 5;
  ReduceOp op = ReduceOp::kSum;
  // At least this long timed at every size (more iterations than `iterations` where the size
  // is quick, judged by the warm-up), so that a moment the machine gave to something else is a
  // small part of a small size's time. 0: `iterations`, however short.
  double min_seconds = 0;
};

struct AllReduceBenchRow {
  std::string algorithm;
  std::size_t bytes = 0;      // per replica, as nccl-tests counts "size"
  std::size_t count = 0;      // floats per replica
  double seconds = 0;         // mean time of one all-reduce
  double algbw = 0;           // bytes / seconds, in bytes/s
  double busbw = 0;           // algbw * 2(n-1)/n: the bandwidth a ring would need from each link
  std::size_t wrong = 0;      // elements that differ from the exact result
  double bound_fraction = 0;  // T_min / seconds, with T_min = 2*N*S/B (0 if B unknown)
  // The algorithm's own traffic bound: bytes_moved(N, S) / B / seconds (how close it runs to
  // the bandwidth for the bytes it chooses to move; 0 if B unknown).
  double own_bound_fraction = 0;
};

// The sizes of a sweep, rounded down to whole floats (at least one float).
std::vector<std::size_t> sweep_sizes(const AllReduceBenchOptions& options);

// Runs the sweep for one algorithm; buffers come from the devices' arenas (an OutOfMemoryError
// says which size did not fit). `on_row` (optional) sees each row as soon as it is measured;
// `stop_requested` (optional) is asked before each size, and true ends the sweep there.
std::vector<AllReduceBenchRow> run_allreduce_sweep(
    const std::vector<Device*>& devices, const AllReduce& algorithm,
    const AllReduceBenchOptions& options, double bound_bandwidth,
    const std::function<void(const AllReduceBenchRow&)>& on_row = {},
    const std::function<bool()>& stop_requested = {});

}  // namespace mirrorlab::vgpu
