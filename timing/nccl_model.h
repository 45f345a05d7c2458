// NCCL's own estimate of an all-reduce's time, and so its choice of algorithm and protocol,
// written after the model in NCCL's src/graph/tuning.cc (2.28): for each algorithm (Tree, Ring,
// NVLS) and protocol (LL, LL128, Simple) a latency, from a base latency plus per-hop hardware
// latencies, and a bandwidth, from the channels' bandwidth with per-protocol ceilings; the time
// of S bytes is latency + S / bandwidth, and NCCL runs the pair of least time. Our own code; the
// constants are NCCL's (docs/timing-model.md lists them and what is left out).
#pragma once

#include <string>
#include <vector>

namespace mirrorlab::timing {

enum class NcclAlgorithm { kTree, kRing, kNvls };  // NCCL's order (ties go to the first)
enum class NcclProtocol { kLL, kLL128, kSimple };
const char* to_string(NcclAlgorithm a);  // "Tree", "Ring", "NVLS", as NCCL spells them
const char* to_string(NcclProtocol p);   // "LL", "LL128", "Simple"

// What NCCL's model knows of a machine: what its topology search finds (channels and their
// bandwidth) and the hardware class.
struct NcclMachine {
  int compute_capability = 90;  // 70 (Volta), 80 (Ampere), 90 (Hopper); others: the nearest below
  bool nvlink = true;           // the GPUs of a node talk over NVLink (else PCIe)
  int channels = 16;            // rings / trees the search found
  double channel_gbs = 20;      // each channel's bandwidth inside a node, GB/s (NCCL's bwIntra)
  double network_channel_gbs = 0;  // across nodes (bwInter), GB/s; 0 on one node
  bool nvls = false;               // NVSwitch multicast (NVLS), on Hopper and later
  int nvls_channels = 16;
  bool intel_cpu = true;  // NCCL's network overhead and LL ceilings depend on it
};

struct NcclCost {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;
  double algbw_gbs = 0;  // S / (time - latency): NCCL's "bandwidth" for this collective
  double time_us = 0;    // for the size asked
};

// Every algorithm and protocol NCCL would consider for an all-reduce of `bytes` per rank over
// `ranks` GPUs on `nodes` nodes, in NCCL's order; those it would not run are left out.
std::vector<NcclCost> nccl_costs(const NcclMachine& machine, int ranks, int nodes, double bytes);
// The one it runs: the least time (the first of equal times).
NcclCost nccl_choice(const NcclMachine& machine, int ranks, int nodes, double bytes);

}  // namespace mirrorlab::timing
