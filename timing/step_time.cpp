#include "timing/step_time.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mirrorlab::timing {
namespace {

bool positive_finite(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

int compute_engines(const Topology& topology) {
  if (topology.fabric != Fabric::kSharedMemory) return 0;
  return topology.memory.engines > 0 ? topology.memory.engines : 1;
}

double compute_seconds(double flops, const Topology& topology) {
  if (!positive_finite(topology.flops)) {
    throw std::invalid_argument(topology.id + " gives no FLOP/s (flops_tflops)");
  }
  if (!positive_finite(flops)) throw std::invalid_argument("a step's FLOPs must be positive");
  return flops / topology.flops;
}

AllReduceTime all_reduce_time(const Topology& topology, ScheduleMaker schedule, int ranks,
                              double bytes) {
  if (ranks > topology.ranks()) {
    throw std::invalid_argument(std::to_string(ranks) + " devices do not fit " + topology.id +
                                "'s " + std::to_string(topology.ranks()) + " GPUs");
  }
  if (ranks <= 1) return {};
  if (schedule == nullptr) {
    if (!topology.has_nccl) {
      throw std::invalid_argument("NCCL cannot run on " + topology.id +
                                  ": it needs one GPU per rank");
    }
    const int nodes = (ranks + topology.gpus_per_node - 1) / topology.gpus_per_node;
    const NcclCost c = nccl_choice(topology.nccl, ranks, nodes, bytes);
    return {c.time_us * 1e-6, std::string(to_string(c.algorithm)) + " " + to_string(c.protocol)};
  }
  const Estimate e = estimate(schedule(ranks, bytes, 0), topology);
  AllReduceTime t{e.seconds, ""};
  const auto slowest = std::max_element(
      e.steps.begin(), e.steps.end(),
      [](const StepEstimate& a, const StepEstimate& b) { return a.seconds < b.seconds; });
  if (slowest != e.steps.end()) t.how = slowest->phase + ": " + slowest->bottleneck;
  return t;
}

std::vector<StepTime> step_times(const StepInputs& in,
                                 const std::vector<AllReduceTime>& all_reduce) {
  if (!positive_finite(in.replica_compute)) {
    throw std::invalid_argument("a replica's compute time must be positive and finite");
  }
  if (!positive_finite(in.batch_per_replica)) {
    throw std::invalid_argument("the batch per replica must be positive and finite");
  }
  if (in.engines < 0) throw std::invalid_argument("the engines cannot be negative");
  std::vector<StepTime> rows;
  for (std::size_t i = 0; i < all_reduce.size(); ++i) {
    const AllReduceTime& a = all_reduce[i];
    if (!std::isfinite(a.seconds) || a.seconds < 0) {
      throw std::invalid_argument("an all-reduce time must be 0 or more, and finite");
    }
    StepTime r;
    r.devices = static_cast<int>(i) + 1;
    r.replicas_per_engine = in.engines > 0 ? (r.devices + in.engines - 1) / in.engines : 1;
    r.compute = r.replicas_per_engine * in.replica_compute;
    r.all_reduce = a.seconds;
    r.all_reduce_how = a.how;
    r.seconds = r.compute + r.all_reduce;
    r.images_per_second = r.devices * in.batch_per_replica / r.seconds;
    const double one = rows.empty() ? r.images_per_second : rows.front().images_per_second;
    r.speedup = r.images_per_second / one;
    r.added = rows.empty() ? 1 : (r.images_per_second - rows.back().images_per_second) / one;
    rows.push_back(r);
  }
  return rows;
}

std::vector<StepTime> predict_steps(const Topology& topology, ScheduleMaker schedule,
                                    double gradient_bytes, const StepInputs& inputs,
                                    int max_devices) {
  std::vector<AllReduceTime> all_reduce;
  for (int n = 1; n <= max_devices; ++n) {
    all_reduce.push_back(all_reduce_time(topology, schedule, n, gradient_bytes));
  }
  return step_times(inputs, all_reduce);
}

StopPoint where_adding_stops(const std::vector<StepTime>& rows, double share) {
  StopPoint stop;
  for (const StepTime& r : rows) {
    if (r.devices > 1 && r.added < share) {
      stop.stopped = true;
      return stop;
    }
    stop.devices = r.devices;
  }
  return stop;
}

}  // namespace mirrorlab::timing
