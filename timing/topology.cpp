#include "timing/topology.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace mirrorlab::timing {

const char* to_string(Fabric f) {
  switch (f) {
    case Fabric::kSwitch:
      return "switch";
    case Fabric::kPairs:
      return "pairs";
    case Fabric::kHost:
      return "host";
    case Fabric::kSharedMemory:
      return "shared-memory";
  }
  return "?";
}

double MemorySpec::bandwidth(Work work, int active, double bytes, bool peer) const {
  // The copy kernel's curve for copies only: its counted bytes (a read and a write) leave out the
  // read of each line it writes (write-allocate), which a copy into a buffer not in the cache
  // pays, as the algorithms' copies do. A reduce (b += a) writes lines it has just read, as do
  // the lone reads and writes of the one-shot (each tile of a slice read, summed, written back in
  // place): their bytes are what the add kernel counts.
  const bool reduce = work != Work::kCopy;
  peer = peer && !(reduce ? reduce_peer_all : copy_peer_all).empty();
  const BandwidthCurve& all =
      peer ? (reduce ? reduce_peer_all : copy_peer_all) : (reduce ? reduce_all : copy_all);
  const BandwidthCurve& one_curve =
      peer ? (reduce ? reduce_peer_one : copy_peer_one) : (reduce ? reduce_one : copy_one);
  const double many = all.at(bytes);
  const double one = one_curve.empty() ? many : one_curve.at(bytes);
  if (active <= 1 || engines == 1) return one;
  if (engines <= 0 || active >= engines) return many;
  // Between one engine and all of them, in proportion to the engines at work.
  return one + (many - one) * (active - 1) / (engines - 1);
}

std::string Topology::gpu_name(int rank) const {
  const std::string gpu = "/gpu:" + std::to_string(rank % gpus_per_node);
  return nodes > 1 ? "node " + std::to_string(rank / gpus_per_node) + " " + gpu : gpu;
}

namespace {

struct Load {
  double bytes = 0, seconds = 0, latency = 0;
  ResourceKind kind = ResourceKind::kLink;
  int from = -1, to = -1;
};

// The link direction `name` from end `from` to end `to` carries `bytes` more.
void add(std::map<std::string, Load>& loads, const std::string& name, double bytes,
         const LinkSpec& link, int from, int to) {
  if (!(link.bandwidth > 0)) {
    throw std::invalid_argument("the topology gives no bandwidth for " + name);
  }
  Load& l = loads[name];
  l.bytes += bytes;
  l.seconds += bytes / link.bandwidth;
  l.latency = std::max(l.latency, link.latency);
  l.from = from;
  l.to = to;
}

// The link directions a move's bytes cross.
void route(const Topology& t, const Move& m, std::map<std::string, Load>& loads) {
  if (t.fabric == Fabric::kSharedMemory || m.from == m.to) return;
  const auto name = [&](int rank) { return t.gpu_name(rank); };
  if (m.from == kSwitch || m.to == kSwitch) {  // NVLS: a GPU's own port
    if (m.from == kSwitch) {
      add(loads, "switch -> " + name(m.to), m.bytes, t.gpu_link, kSwitch, m.to);
    } else {
      add(loads, name(m.from) + " -> switch", m.bytes, t.gpu_link, m.from, kSwitch);
    }
    return;
  }
  const int node_from = m.from / t.gpus_per_node, node_to = m.to / t.gpus_per_node;
  if (node_from != node_to) {
    add(loads, name(m.from) + " network out", m.bytes, t.network, m.from, kNetwork);
    add(loads, name(m.to) + " network in", m.bytes, t.network, kNetwork, m.to);
    return;
  }
  switch (t.fabric) {
    case Fabric::kSwitch:
      add(loads, name(m.from) + " -> switch", m.bytes, t.gpu_link, m.from, kSwitch);
      add(loads, "switch -> " + name(m.to), m.bytes, t.gpu_link, kSwitch, m.to);
      break;
    case Fabric::kPairs:
      if (m.from / 2 == m.to / 2) {
        add(loads, "bridge " + name(m.from) + " -> " + name(m.to), m.bytes, t.gpu_link, m.from,
            m.to);
      } else {
        add(loads, name(m.from) + " -> host", m.bytes, t.host_link, m.from, kHost);
        add(loads, "host -> " + name(m.to), m.bytes, t.host_link, kHost, m.to);
      }
      break;
    case Fabric::kHost:
      add(loads, name(m.from) + " -> host", m.bytes, t.gpu_link, m.from, kHost);
      add(loads, "host -> " + name(m.to), m.bytes, t.gpu_link, kHost, m.to);
      break;
    case Fabric::kSharedMemory:
      break;
  }
}

// The engine a rank's work runs on: its own ("/gpu:1 engine"), or in one shared memory with
// fewer engines than ranks, the core it shares ("/gpu:0+/gpu:2 core").
std::string engine_name(const Topology& t, int ranks, int rank) {
  const MemorySpec& m = t.memory;
  if (t.fabric != Fabric::kSharedMemory || m.engines <= 0 || ranks <= m.engines) {
    return t.gpu_name(rank) + " engine";
  }
  std::string name;
  for (int r = 0; r < ranks; ++r) {
    if (m.engine_of(r) == m.engine_of(rank))
      name.append(name.empty() ? "" : "+").append(t.gpu_name(r));
  }
  return name + " core";
}

// The lowest rank whose work runs on `rank`'s engine (the first of engine_name's list).
int first_rank_of_engine(const Topology& t, int ranks, int rank) {
  const MemorySpec& m = t.memory;
  if (t.fabric != Fabric::kSharedMemory || m.engines <= 0 || ranks <= m.engines) return rank;
  for (int r = 0; r < ranks; ++r) {
    if (m.engine_of(r) == m.engine_of(rank)) return r;
  }
  return rank;
}

}  // namespace

double step_working_set(const Schedule& schedule, const ScheduleStep& step, bool shared) {
  if (!shared) return schedule.bytes;  // a GPU's own memory holds its one buffer
  // One memory holds every rank's buffer. A step touches each move's source and destination:
  // 2S for a ring's step of n chunks of S/n, every buffer (nS) for reduce-to-one's steps and the
  // one-shot's. Where a step touches less than every buffer, the all-reduce still cycles through
  // all of them, step after step, and all-reduce after all-reduce: a cache that holds the step's
  // bytes but not every buffer keeps only part of what the next step reads. The curves are read
  // between the two, at their geometric mean (the ring on 4 CPU virtual GPUs: 2.8S), a choice
  // checked against the runs in docs/results.md, not derived.
  double touched = 0;
  for (const Move& m : step.moves) touched += 2 * m.bytes;
  const double every_buffer = schedule.bytes * schedule.ranks;
  return std::sqrt(std::min(touched, every_buffer) * every_buffer);
}

std::string cannot_run(const Schedule& schedule, const Topology& topology) {
  if (!schedule.peer_kernels || schedule.ranks < 2) return "";
  if (schedule.ranks > topology.gpus_per_node) {
    return "cannot run across " + topology.id +
           "'s nodes: its kernels read and write every GPU's memory, and a GPU cannot reach the "
           "memory of another node's GPU";
  }
  if (!topology.peer_access) {
    return "cannot run on " + topology.id +
           ": its kernels read and write every GPU's memory, and these GPUs cannot reach each "
           "other's memory (no peer access)";
  }
  return "";
}

Estimate estimate(const Schedule& schedule, const Topology& topology) {
  if (schedule.ranks > topology.ranks()) {
    throw std::invalid_argument("a schedule of " + std::to_string(schedule.ranks) +
                                " ranks does not fit " + topology.id + "'s " +
                                std::to_string(topology.ranks()) + " GPUs");
  }
  if (const std::string why = cannot_run(schedule, topology); !why.empty()) {
    throw std::invalid_argument("this all-reduce " + why);
  }
  const bool shared = topology.fabric == Fabric::kSharedMemory;
  Estimate e;
  if (!schedule.steps.empty()) {
    e.call_latency = topology.call_latency;
    e.seconds = e.call_latency;
  }
  for (const ScheduleStep& step : schedule.steps) {
    std::map<std::string, Load> loads;
    std::set<int> engines;
    for (const Move& m : step.moves) engines.insert(m.engine());
    const int active = static_cast<int>(engines.size());
    const double working_set = step_working_set(schedule, step, shared);
    for (const Move& m : step.moves) {
      route(topology, m, loads);
      const double traffic = memory_traffic(m.work, m.bytes);
      // Bytes another engine wrote last come from its cache, not the worker's (shared memory).
      const MemorySpec& memory = topology.memory;
      const bool peer = shared && m.from != kSwitch && m.work != Work::kWrite &&
                        memory.engine_of(m.writer()) != memory.engine_of(m.engine());
      // The engine that does the work, at what one engine alone gets from its memory.
      const double own = memory.bandwidth(m.work, 1, working_set, peer);
      if (!(own > 0)) throw std::invalid_argument("the topology gives no memory bandwidth");
      Load& engine = loads[engine_name(topology, schedule.ranks, m.engine())];
      engine.kind = ResourceKind::kEngine;
      engine.from = engine.to = first_rank_of_engine(topology, schedule.ranks, m.engine());
      engine.bytes += traffic;
      engine.seconds += traffic / own;
      if (shared) {  // and what all the engines at work share
        const double all = memory.bandwidth(m.work, active, working_set, peer);
        Load& l = loads["memory"];
        l.kind = ResourceKind::kMemory;
        l.bytes += traffic;
        l.seconds += traffic / all;
      }
    }
    StepEstimate s;
    s.phase = step.phase;
    s.latency = shared ? topology.step_latency +
                             topology.move_latency * static_cast<double>(step.moves.size())
                       : 0;
    double busiest = 0;
    for (const auto& [name, load] : loads) {
      s.loads.push_back({name, load.bytes, load.seconds, load.kind, load.from, load.to});
      s.latency = std::max(s.latency, load.latency);
      if (load.seconds > busiest) {
        busiest = load.seconds;
        s.bottleneck = name;
      }
    }
    s.seconds = s.latency + busiest;
    e.seconds += s.seconds;
    e.steps.push_back(std::move(s));
  }
  return e;
}

}  // namespace mirrorlab::timing
