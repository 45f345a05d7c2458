// The time of one training step of mirrored training on n devices, and the speed-up as devices
// are added, from two things: one replica's compute (forward, backward and update of its
// per-replica batch: measured on a device, or its FLOPs over a machine's FLOP/s) and the
// all-reduce of the gradients, predicted by this model (estimate() over a schedule, or NCCL's
// own tuning model where NCCL would run). Pure functions, as the rest of timing/.
//
//   step(n)    = overlapped + ceil(n / engines) x (compute - overlapped) + all-reduce(n)
//                (engines: devices that compute at once; CPU virtual GPUs share the cores, logical
//                GPUs of one card share it, overlapping only their launches and host costs)
//   images/s   = n x batch per replica / step(n)   (MirroredStrategy grows the global batch)
//   speed-up   = images/s(n) / images/s(1)
//   added(n)   = (images/s(n) - images/s(m)) / ((n - m) x images/s(1)), m the count before n in
//                the table: what each device added since brought, in one device's worth
// A device pays for itself while added(n) >= kPaysForItself (half a device's worth). The counts
// are 1, 2, ... up to a node's GPUs, then whole nodes (NCCL's model takes whole nodes).
// With the gradients in packs (timing/pack_schedule.h) the all-reduce term is what the step waits
// for after backward: every pack's all-reduce, less what overlap hid behind backward.
// Left out (docs/timing-model.md, section 7): replicas computing at once slowing each other
// (shared memory bandwidth and caches), the split of the batch, input pipelines, and kernel
// launch costs that no FLOP/s figure includes.
#pragma once

#include <string>
#include <vector>

#include "timing/pack_schedule.h"
#include "timing/schedule.h"
#include "timing/topology.h"

namespace mirrorlab::timing {

// The engines that compute at once on `topology`: in one shared memory its engines (CPU cores),
// or 1 where it gives none (logical GPUs of one card share its SMs); elsewhere 0: every GPU
// computes on its own.
int compute_engines(const Topology& topology);

// One replica's compute at `flops` per step on one GPU of `topology`: flops / its FLOP/s.
// Throws std::invalid_argument when the topology gives no FLOP/s.
double compute_seconds(double flops, const Topology& topology);

// How the gradients are all-reduced: one of mirrorlab's schedules (as the table of algorithms
// gives them), or, with none, NCCL's choice by its own tuning model.
using ScheduleMaker = Schedule (*)(int ranks, double bytes, int destination);

struct AllReduceTime {
  double seconds = 0;
  std::string how;  // NCCL: what it picks ("Ring LL128"); a schedule: its slowest step's phase
                    // and busiest resource ("broadcast: memory"); 1 rank: ""
};
// One all-reduce of `bytes` per rank on the first `ranks` GPUs of `topology` (filling node after
// node). One rank has nothing to reduce: 0. Throws std::invalid_argument for more ranks than the
// topology has, or NCCL on a topology where it cannot run.
AllReduceTime all_reduce_time(const Topology& topology, ScheduleMaker schedule, int ranks,
                              double bytes);

struct StepInputs {
  double replica_compute = 0;    // seconds: one replica's forward, backward and update alone
  int engines = 0;               // compute_engines(); 0: one per device
  double batch_per_replica = 0;  // examples
  // Seconds of replica_compute that replicas sharing an engine spend at once rather than in
  // turn: on logical GPUs of one card, their kernels' launches and the host's cost (each replica
  // has its own host thread and stream, and kernels too small to fill the card run side by side);
  // 0 where nothing overlaps (CPU cores, a measured compute).
  double overlapped = 0;
  // The gradients in packs, in the order they are all-reduced; empty: one buffer after backward.
  // `backward`: seconds of replica_compute that are backward (the window packs can hide in).
  // DeviceCount::pack_seconds then gives each pack's time.
  std::vector<PackWork> packs;
  double backward = 0;
  bool overlap = true;
};

// The share of an all-reduce's speed it keeps while backward computes on `ranks` devices of
// `topology` (pack_all_reduce's concurrency): GPUs move data on links and copy engines of their
// own, 1; CPU-backed devices share the cores, so only the cores the replicas leave idle.
double communication_concurrency(const Topology& topology, int ranks);

// The device counts of the table on `topology`, up to `max_devices`: 1, 2, ... up to a node's
// GPUs, then 2, 3, ... whole nodes.
std::vector<int> device_counts(const Topology& topology, int max_devices);

// One count of the table: the all-reduce on that many devices.
struct DeviceCount {
  int devices = 0;
  AllReduceTime all_reduce;          // the whole buffer at once
  std::vector<double> pack_seconds;  // with packs (StepInputs::packs): each pack's all-reduce
  double concurrency = 1;            // with packs: pack_all_reduce's at this count
};

struct StepTime {
  int devices = 0;
  int replicas_per_engine = 1;  // replicas one engine computes one after another
  double compute = 0;           // seconds: overlapped + replicas_per_engine x the rest
  double all_reduce = 0;        // seconds the step spends on it (with packs: after backward)
  double all_reduce_total = 0;  // with packs: every pack's all-reduce, hidden or not
  std::string all_reduce_how;
  double seconds = 0;  // compute + all-reduce
  double images_per_second = 0;
  double speedup = 0;  // images/s over one device's
  double added = 0;    // images/s each device added since the row before brought, in one
                       // device's images/s (1 device: 1)
};

// A row for each count, in order: the first must be 1 device (normally with no all-reduce), the
// others more than the one before. Throws std::invalid_argument for counts out of order, a
// compute or batch that is not positive and finite, a negative engine count, or an all-reduce
// time that is negative or not finite.
std::vector<StepTime> step_times(const StepInputs& inputs, const std::vector<DeviceCount>& counts);

// step_times() at device_counts(topology, max_devices), all-reducing `gradient_bytes` per replica
// with `schedule` (none: NCCL), and each of inputs.packs where there are packs (their
// concurrency: communication_concurrency at each count).
std::vector<StepTime> predict_steps(const Topology& topology, ScheduleMaker schedule,
                                    double gradient_bytes, const StepInputs& inputs,
                                    int max_devices);

// Another device pays for itself while it adds at least this share of one device's images/s.
inline constexpr double kPaysForItself = 0.5;

struct StopPoint {
  int devices = 0;       // the most devices before the first that does not pay for itself
  bool stopped = false;  // false: every device of the table paid for itself
  int next = 0;          // stopped: the count of the row after (whose devices do not pay)
};
StopPoint where_adding_stops(const std::vector<StepTime>& rows, double share = kPaysForItself);

}  // namespace mirrorlab::timing
