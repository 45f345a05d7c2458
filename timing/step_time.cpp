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

double communication_concurrency(const Topology& topology, int ranks) {
  if (topology.fabric != Fabric::kSharedMemory || topology.memory.engines <= 0 || ranks <= 0) {
    return 1;
  }
  return std::clamp(static_cast<double>(topology.memory.engines - ranks) / ranks, 0.0, 1.0);
}

std::vector<int> device_counts(const Topology& topology, int max_devices) {
  std::vector<int> counts;
  const int per_node = std::max(1, topology.gpus_per_node);
  for (int n = 1; n <= std::min(max_devices, per_node); ++n) counts.push_back(n);
  for (int n = 2 * per_node; n <= max_devices; n += per_node) counts.push_back(n);
  return counts;
}

std::vector<StepTime> step_times(const StepInputs& in, const std::vector<DeviceCount>& counts) {
  if (!positive_finite(in.replica_compute)) {
    throw std::invalid_argument("a replica's compute time must be positive and finite");
  }
  if (!positive_finite(in.batch_per_replica)) {
    throw std::invalid_argument("the batch per replica must be positive and finite");
  }
  if (in.engines < 0) throw std::invalid_argument("the engines cannot be negative");
  if (!(in.overlapped >= 0) || !(in.overlapped <= in.replica_compute)) {
    throw std::invalid_argument(
        "the compute replicas overlap must be 0 or more and no more than a replica's compute");
  }
  std::vector<StepTime> rows;
  for (const DeviceCount& c : counts) {
    if (rows.empty() ? c.devices != 1 : c.devices <= rows.back().devices) {
      throw std::invalid_argument("the device counts must start at 1 and grow");
    }
    if (!std::isfinite(c.all_reduce.seconds) || c.all_reduce.seconds < 0) {
      throw std::invalid_argument("an all-reduce time must be 0 or more, and finite");
    }
    StepTime r;
    r.devices = c.devices;
    r.replicas_per_engine = in.engines > 0 ? (r.devices + in.engines - 1) / in.engines : 1;
    r.compute = in.overlapped + r.replicas_per_engine * (in.replica_compute - in.overlapped);
    r.all_reduce = r.all_reduce_total = c.all_reduce.seconds;
    r.all_reduce_how = c.all_reduce.how;
    if (!in.packs.empty() && r.devices > 1) {
      // Replicas sharing an engine run backward in turn: the window is as long as theirs.
      const double backward =
          in.backward * (in.engines > 0 ? static_cast<double>(r.replicas_per_engine) : 1.0);
      const PackedAllReduce p =
          pack_all_reduce(in.packs, backward, c.pack_seconds, in.overlap, c.concurrency);
      r.all_reduce = p.exposed;
      r.all_reduce_total = p.all_reduce;
    }
    r.seconds = r.compute + r.all_reduce;
    r.images_per_second = r.devices * in.batch_per_replica / r.seconds;
    if (rows.empty()) {
      r.speedup = r.added = 1;
    } else {
      const StepTime& one = rows.front();
      const StepTime& before = rows.back();
      r.speedup = r.images_per_second / one.images_per_second;
      r.added = (r.images_per_second - before.images_per_second) /
                ((r.devices - before.devices) * one.images_per_second);
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<StepTime> predict_steps(const Topology& topology, ScheduleMaker schedule,
                                    double gradient_bytes, const StepInputs& inputs,
                                    int max_devices) {
  std::vector<DeviceCount> counts;
  for (const int n : device_counts(topology, max_devices)) {
    DeviceCount c{n, all_reduce_time(topology, schedule, n, gradient_bytes), {}, 1};
    for (const PackWork& p : inputs.packs) {
      c.pack_seconds.push_back(all_reduce_time(topology, schedule, n, p.bytes).seconds);
    }
    c.concurrency = communication_concurrency(topology, n);
    counts.push_back(std::move(c));
  }
  return step_times(inputs, counts);
}

StopPoint where_adding_stops(const std::vector<StepTime>& rows, double share) {
  StopPoint stop;
  for (const StepTime& r : rows) {
    if (r.devices > 1 && r.added < share) {
      stop.stopped = true;
      stop.next = r.devices;
      return stop;
    }
    stop.devices = r.devices;
  }
  return stop;
}

}  // namespace mirrorlab::timing
