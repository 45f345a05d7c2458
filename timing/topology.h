// A machine for the timing model: how its GPUs connect (the links' latency and bandwidth, each
// direction), their memory, their FLOP/s, and what NCCL's tuning model needs. Read from a TOML
// file (topology_file.h); presets live in timing/topologies/, each saying where its numbers come
// from. Pure data: nothing here touches a device.
#pragma once

#include <string>
#include <vector>

#include "timing/bandwidth_curve.h"
#include "timing/compute_model.h"
#include "timing/nccl_model.h"
#include "timing/schedule.h"

namespace mirrorlab::timing {

// How the GPUs of a node connect.
enum class Fabric {
  kSwitch,        // each GPU has a port on a switch (NVSwitch): any pair at the port's speed
  kPairs,         // GPUs 2k and 2k+1 are bridged (NVLink bridge); other pairs through the host
  kHost,          // every GPU has its own PCIe link to the host; all traffic goes through it
  kSharedMemory,  // logical GPUs of one memory (one card, or CPU virtual GPUs): a transfer is a
                  // copy inside that memory
};
const char* to_string(Fabric f);  // "switch", "pairs", "host", "shared-memory"

struct LinkSpec {
  double latency = 0;    // seconds per message
  double bandwidth = 0;  // bytes/s, each direction
};

// A memory's bandwidth (bytes read plus written per second) for the two kernels an all-reduce
// runs, by the bytes that memory holds for the all-reduce (its working set: on a GPU of its own,
// S; in one shared memory, every device's S together, since they share its caches): with every
// engine busy, and with one alone (a CPU core; on a GPU the same). The peer curves are the same
// kernels reading what another engine has just written (on a CPU, from another core's cache);
// empty: no different.
struct MemorySpec {
  BandwidthCurve copy_all, reduce_all, copy_one, reduce_one;
  BandwidthCurve copy_peer_all, reduce_peer_all, copy_peer_one, reduce_peer_one;
  int engines = 0;  // engines that can run at once (CPU cores); 0: as many as there are GPUs
  // The bandwidth when `active` engines work at once over a working set of `bytes`, reading
  // what another engine wrote (`peer`) or what they wrote themselves: the copy curves for a copy,
  // the add curves for the rest (a reduce, and the lone reads and in-place writes of a step that
  // writes what it has just read).
  double bandwidth(Work work, int active, double bytes, bool peer = false) const;
  // The engine rank r runs on: r mod engines (mirrorlab binds device i to the i-th CPU, round
  // robin); with 0 engines, its own.
  int engine_of(int rank) const { return engines > 0 ? rank % engines : rank; }
};

struct Topology {
  std::string id, title;
  std::string source;  // where its numbers come from
  std::string path;    // the file it was read from
  int nodes = 1;
  int gpus_per_node = 2;
  Fabric fabric = Fabric::kSwitch;
  LinkSpec gpu_link;        // switch: a GPU's port; pairs: the bridge; host: a GPU's PCIe link
  LinkSpec host_link;       // pairs: a GPU's PCIe link, between pairs
  LinkSpec network;         // more than one node: a GPU's network adapter (one per GPU)
  double step_latency = 0;  // shared memory: one step's synchronisation, seconds
  // Shared memory: each move of a step, seconds (queueing it and seeing it done: on CUDA devices
  // an event pair, a launch and the host's wait for it, one after another for all of a step's
  // moves; on CPU threads, the work handed out and taken back). So a step of m moves has a
  // latency of step_latency + m move_latency.
  double move_latency = 0;
  // Once per all-reduce, seconds: handing it to the devices and waiting for all of them to
  // finish (in one shared memory, waking each device's thread and the host's; on GPUs, the
  // launch and setup that NCCL's model calls its base latency).
  double call_latency = 0;
  MemorySpec memory;      // each GPU's memory; shared memory: the one memory
  double flops = 0;       // one GPU's FLOP/s for training (0: unknown)
  ComputeSpec compute;    // how a GPU runs a step's kernels ([compute]; not given: none)
  bool has_nccl = false;  // NCCL can run here (one GPU per rank)
  // A kernel on one GPU of a node can load and store another GPU's memory (CUDA peer access:
  // NVLink, or PCIe peer-to-peer). One shared memory always can; GPUs of different nodes never
  // can, whatever this says. Read from `peer_access`; left out: false on the host fabric, true
  // on the others.
  bool peer_access = true;
  NcclMachine nccl;

  int ranks() const { return nodes * gpus_per_node; }
  // "/gpu:3" on one node, "node 1 /gpu:3" on several (GPUs numbered within their node).
  std::string gpu_name(int rank) const;
};

// The time of one step of a schedule, and what took it.
// What a resource is, so that a picture can put its bytes where they travel: one direction of a
// link between two ends (ranks, or the switch, host or network of a rank's node), an engine doing
// copies and reduces, or the one shared memory.
enum class ResourceKind { kLink, kEngine, kMemory };
inline constexpr int kHost = -2;     // a link's end: the host of the other end's node (PCIe)
inline constexpr int kNetwork = -3;  // a link's end: the network, through the other end's adapter
struct LinkLoad {
  std::string resource;  // "/gpu:0 -> switch", "bridge /gpu:0 -> /gpu:1", "memory", ...
  double bytes = 0;      // carried (links), or read plus written (memories)
  double seconds = 0;    // bytes / bandwidth
  ResourceKind kind = ResourceKind::kLink;
  // A link: from and to are its ends (a rank, kSwitch, kHost or kNetwork), the switch or host
  // being that of the rank's node. An engine: both are the lowest rank it works for. The memory:
  // both -1.
  int from = -1, to = -1;
};
struct StepEstimate {
  std::string phase;
  double seconds = 0;  // latency + the busiest resource's time
  double latency = 0;
  std::string bottleneck;  // that resource
  std::vector<LinkLoad> loads;
};
struct Estimate {
  double seconds = 0;  // the call latency plus every step's time
  double call_latency = 0;
  std::vector<StepEstimate> steps;
};

// The alpha-beta time of `schedule` on `topology`: each step takes the latency of its slowest
// link (or the shared memory's step latency) plus the time of its busiest resource (a link
// direction, an engine, the shared memory); the steps run one after the other, after the
// topology's call latency. Contention is
// counted only as bytes sharing a resource; congestion, protocols and pipelining are left out.
// Throws std::invalid_argument for a schedule that cannot run there (cannot_run()).
Estimate estimate(const Schedule& schedule, const Topology& topology);

// "" where `schedule` can run on the first schedule.ranks GPUs of `topology` (node after node);
// else why not, as a clause that can follow the algorithm's name ("cannot run on pcie-2: ...").
// Only a schedule of peer kernels (the one-shot) can fail: it needs every GPU to reach every
// other's memory, which GPUs without peer access, or on different nodes, cannot.
std::string cannot_run(const Schedule& schedule, const Topology& topology);

// The bytes at which a step reads the memory's bandwidth curves: a GPU's own memory holds one
// buffer (the schedule's bytes); one shared memory, between the bytes the step touches (each
// move's source and destination) and every rank's buffer, which the all-reduce cycles through:
// their geometric mean (topology.cpp says why).
double step_working_set(const Schedule& schedule, const ScheduleStep& step, bool shared);

}  // namespace mirrorlab::timing
