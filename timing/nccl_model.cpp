#include "timing/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mirrorlab::timing {
namespace {

constexpr int kTree = 0, kRing = 1, kNvls = 2;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

// Microseconds, [algorithm][protocol] (NCCL 2.28's baseLat and hwLat).
constexpr double kBaseLatency[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}};
constexpr double kNvlinkLatency[3][3] = {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 25}};
constexpr double kPciLatency[3][3] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}};
constexpr double kNetLatency[3][3] = {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}};

// GB/s, per architecture (Volta, Ampere, Hopper) and node count (1, 2, more).
constexpr double kLLMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
constexpr double kRingLL128PerChannel[3][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}};
constexpr double kTreeLL128PerChannel[3][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}};
constexpr double kTreePerChannel[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
constexpr double kNvlsEfficiency[3] = {0, 0, 0.85};

// The tree's bandwidth by size, [protocol][floor(log2(bytes / 64))], 64 B to 256 MiB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int arch_index(int compute_capability) {
  return compute_capability >= 90 ? 2 : compute_capability >= 80 ? 1 : 0;
}

int floor_log2(double x) {
  int k = -1;
  for (double v = 1; v <= x; v *= 2) ++k;
  return k;
}

// NCCL's latency (us) and bus bandwidth (GB/s) of algorithm a, protocol p, before sizes.
struct Raw {
  double latency = 0, busbw = 0;
};

Raw raw_cost(const NcclMachine& m, int a, int p, int ranks, int nodes) {
  const int arch = arch_index(m.compute_capability);
  const int by_nodes = nodes <= 2 ? nodes - 1 : 2;
  const int per_node = ranks / nodes;
  const int steps = 2 * (ranks - 1);
  const double(&intra_table)[3][3] = m.nvlink ? kNvlinkLatency : kPciLatency;
  double intra = intra_table[a][p];
  const double inter = per_node == 1 ? kNetLatency[kTree][p] : kNetLatency[a][p];
  Raw r;
  r.latency = kBaseLatency[a][p];
  if (a == kRing) {
    double overhead = nodes > 1 ? (m.intel_cpu ? 1.0 : 2.0) : 0.0;
    if (p == kSimple) overhead *= 3;
    intra = std::max(intra, overhead);
    const int inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
    r.latency += (steps - inter_steps) * intra + inter_steps * inter;
  } else if (a == kTree) {
    r.latency += 2 * ((per_node - 1) * intra + floor_log2(nodes) * inter);
  } else {  // NVLS replaces the base latency
    r.latency = intra + (nodes > 1 ? inter : 0);
  }

  const int channels = a == kNvls ? m.nvls_channels : m.channels;
  double bw = nodes <= 2 ? m.channel_gbs : m.network_channel_gbs;
  if (a == kNvls) {
    if (channels < 2) return {};
    const double intra_bw = 2 * m.channel_gbs * kNvlsEfficiency[arch] * (channels - 1) / channels;
    bw = nodes > 1 ? std::min(intra_bw, m.network_channel_gbs) : intra_bw;
  }
  double busbw = channels * bw;
  const double ll_max = kLLMaxBw[nodes == 1 ? arch : (m.intel_cpu ? 0 : 1)][by_nodes];
  if (a == kRing && p == kLL) busbw = std::min(ll_max, busbw * 0.5);
  if (a == kRing && p == kLL128) {
    busbw = std::min(busbw * 0.92, channels * kRingLL128PerChannel[arch][by_nodes]);
  }
  if (a == kTree) {
    busbw = std::min(busbw * 0.92, channels * kTreePerChannel[arch][by_nodes]);
    if (p == kLL) busbw = std::min(busbw / 3.8, ll_max);
    if (p == kLL128) {
      busbw = std::min(busbw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       channels * kTreeLL128PerChannel[arch][by_nodes]);
    }
  }
  // Bus bandwidth to algorithm bandwidth: a ring (and NVLS) moves 2(n-1)/n of S per link, a
  // tree S up and S down.
  r.busbw = a == kTree ? busbw * 0.5 : busbw * ranks / steps;
  return r;
}

bool enabled(const NcclMachine& m, int a, int p, int ranks, int nodes) {
  if (a == kNvls)
    return p == kSimple && m.nvls && ranks > 2 && nodes == 1 && m.compute_capability >= 90;
  // LL128 needs NVLink inside the node and Volta or later.
  if (p == kLL128) return m.nvlink && m.compute_capability >= 70;
  return true;
}

}  // namespace

const char* to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::kTree:
      return "Tree";
    case NcclAlgorithm::kRing:
      return "Ring";
    case NcclAlgorithm::kNvls:
      return "NVLS";
  }
  return "?";
}

const char* to_string(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::kLL:
      return "LL";
    case NcclProtocol::kLL128:
      return "LL128";
    case NcclProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

std::vector<NcclCost> nccl_costs(const NcclMachine& m, int ranks, int nodes, double bytes) {
  if (ranks < 2 || nodes < 1 || ranks % nodes != 0) {
    throw std::invalid_argument("NCCL's model needs 2 or more ranks in whole nodes (" +
                                std::to_string(ranks) + " ranks on " + std::to_string(nodes) +
                                " nodes)");
  }
  if (!(bytes > 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("NCCL's model needs a positive, finite size");
  }
  if (m.channels < 1 || !(m.channel_gbs > 0) || (nodes > 2 && !(m.network_channel_gbs > 0))) {
    throw std::invalid_argument("NCCL's model needs channels and their bandwidth");
  }
  std::vector<NcclCost> costs;
  for (int a : {kTree, kRing, kNvls}) {
    for (int p : {kLL, kLL128, kSimple}) {
      if (!enabled(m, a, p, ranks, nodes)) continue;
      Raw r = raw_cost(m, a, p, ranks, nodes);
      if (!(r.busbw > 0)) continue;
      double bw = r.busbw;
      const int size_index = floor_log2(bytes / 64);
      if (a == kTree && size_index >= 0 && size_index < 23) bw *= kTreeCorrection[p][size_index];
      double latency = r.latency;
      if (a == kRing && p == kSimple && nodes > 1 && bytes / (m.channels * ranks) >= 64) {
        latency *= m.compute_capability < 80 ? 1.9 : 1.4;
      }
      NcclCost c;
      c.algorithm = static_cast<NcclAlgorithm>(a);
      c.protocol = static_cast<NcclProtocol>(p);
      c.latency_us = latency;
      c.algbw_gbs = bw;
      c.time_us = latency + bytes / (1000 * bw);
      costs.push_back(c);
    }
  }
  return costs;
}

NcclCost nccl_choice(const NcclMachine& m, int ranks, int nodes, double bytes) {
  const std::vector<NcclCost> costs = nccl_costs(m, ranks, nodes, bytes);
  const auto best = std::min_element(costs.begin(), costs.end(), [](const auto& x, const auto& y) {
    return x.time_us < y.time_us;
  });
  return *best;
}

}  // namespace mirrorlab::timing
