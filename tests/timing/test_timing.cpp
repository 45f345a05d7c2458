// The timing model (timing/), pinned on cases worked by hand: what each schedule moves (that it
// is what the real algorithms move is tests/virtualgpu/test_collectives.cpp's), the alpha-beta time
// of a step, a tree's depth, nccl-tests' bus bandwidth factor, NCCL's latencies and the protocol
// its model picks, and topology files read and refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "timing/nccl_model.h"
#include "timing/schedule.h"
#include "timing/topology.h"
#include "timing/topology_file.h"

namespace mirrorlab::timing {
namespace {

constexpr double kMiB = 1 << 20;

// Bytes a rank's links carry in one direction on a switch: its port's bytes, summed over steps.
double port_bytes(const Estimate& e, const std::string& port) {
  double total = 0;
  for (const StepEstimate& s : e.steps) {
    for (const LinkLoad& l : s.loads) {
      if (l.resource == port) total += l.bytes;
    }
  }
  return total;
}

TEST(Schedule, RingMovesTwoNMinusOneOverNOfSPerRank) {
  for (int n : {2, 3, 4, 8}) {
    const Schedule s = ring_schedule(n, 64 * kMiB);
    EXPECT_EQ(static_cast<int>(s.steps.size()), 2 * (n - 1));
    for (int r = 0; r < n; ++r) {
      EXPECT_DOUBLE_EQ(s.sent(r), 2.0 * (n - 1) / n * 64 * kMiB) << n << " ranks, rank " << r;
      EXPECT_DOUBLE_EQ(s.received(r), 2.0 * (n - 1) / n * 64 * kMiB);
    }
    // In one memory: n-1 reduces (3 S/n) and n-1 copies (2 S/n) per rank: 5(n-1)S in all.
    EXPECT_DOUBLE_EQ(s.memory_traffic(), 5.0 * (n - 1) * 64 * kMiB);
  }
}

TEST(Schedule, ReduceToOneSendsEverythingThroughItsDestination) {
  const Schedule s = reduce_to_one_schedule(4, 8 * kMiB, 1);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].phase, "reduce");
  EXPECT_DOUBLE_EQ(s.received(1), 3 * 8 * kMiB);  // (n-1) S in
  EXPECT_DOUBLE_EQ(s.sent(1), 3 * 8 * kMiB);      // (n-1) S out
  EXPECT_DOUBLE_EQ(s.received(0), 8 * kMiB);
  EXPECT_DOUBLE_EQ(s.memory_traffic(), 5.0 * 3 * 8 * kMiB);
  EXPECT_THROW(reduce_to_one_schedule(4, kMiB, 4), std::invalid_argument);
}

TEST(Schedule, OneShotReadsAndWritesEachBufferOnce) {
  const Schedule s = one_shot_schedule(4, 8 * kMiB);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(s.memory_traffic(), 2.0 * 4 * 8 * kMiB);  // 2NS: the least in one memory
}

TEST(Schedule, TreeDepthIsTheChainInANodeAndLog2OfTheNodes) {
  EXPECT_EQ(tree_depth(8, 8), 7);    // one node: a chain of 8
  EXPECT_EQ(tree_depth(16, 8), 8);   // 2 nodes: 7 in the node, 1 between
  EXPECT_EQ(tree_depth(4, 1), 2);    // 4 nodes of 1: a binary tree, 2 levels
  EXPECT_EQ(tree_depth(40, 8), 10);  // 5 nodes: ceil(log2 5) = 3
  EXPECT_THROW(tree_depth(10, 4), std::invalid_argument);
  const Schedule s = tree_schedule(4, 1, 8 * kMiB);
  EXPECT_EQ(s.steps.size(), 4u);  // 2 levels up, 2 down
  // Every non-root rank sends its half up and gets it down in each of the two trees.
  for (int r = 0; r < 4; ++r) EXPECT_GT(s.received(r), 0) << r;
}

TEST(Schedule, NvlsCrossesEachPortWithAboutSPerDirection) {
  const Schedule s = nvls_schedule(8, 8 * kMiB);
  // Up: every rank's S to the switch, and its reduced slice S/n back; then its slice S/n up
  // and every slice S down: S(n+1)/n each way.
  for (int r = 0; r < 8; ++r) {
    EXPECT_DOUBLE_EQ(s.sent(r), 8 * kMiB * 9 / 8);
    EXPECT_DOUBLE_EQ(s.received(r), 8 * kMiB * 9 / 8);
  }
}

TEST(Schedule, BusBandwidthFactorIsNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(1), 1.0);
}

// What the real algorithms move (host buffers, an observer of their steps) is what their
// schedules say: the same steps, phases, and (from, to, bytes, reduce or copy) in each.
Topology switch_of(int gpus, double gbs, double latency_us) {
  Topology t;
  t.id = "test-switch";
  t.gpus_per_node = gpus;
  t.fabric = Fabric::kSwitch;
  t.gpu_link = {latency_us * 1e-6, gbs * 1e9};
  t.memory.copy_all = t.memory.reduce_all = BandwidthCurve(1e15);  // memory never the limit
  return t;
}

TEST(AlphaBeta, RingOnASwitchIsTwoNMinusOneStepsOfAlphaPlusChunkOverB) {
  const Topology t = switch_of(8, 100, 2);
  const double s = 64 * kMiB;
  const Estimate e = estimate(ring_schedule(8, s), t);
  // 14 steps, each: 2 us + (S/8) / 100 GB/s, each port carrying one chunk.
  EXPECT_NEAR(e.seconds, 14 * (2e-6 + s / 8 / 100e9), 1e-12);
  EXPECT_DOUBLE_EQ(port_bytes(e, "/gpu:0 -> switch"), 2.0 * 7 / 8 * s);
  // So the bus bandwidth it predicts is the link's, less latency: busbw = S/t * 2(n-1)/n.
  const double busbw = s / e.seconds * busbw_factor(8);
  EXPECT_GT(busbw, 0.95 * 100e9);
  EXPECT_LT(busbw, 100e9);
}

TEST(AlphaBeta, ReduceToOneIsLimitedByItsDestinationsPort) {
  const Topology t = switch_of(4, 100, 0);
  const double s = 16 * kMiB;
  const Estimate e = estimate(reduce_to_one_schedule(4, s, 0), t);
  ASSERT_EQ(e.steps.size(), 2u);
  EXPECT_EQ(e.steps[0].bottleneck, "switch -> /gpu:0");  // 3 S arrive through one port
  EXPECT_NEAR(e.steps[0].seconds, 3 * s / 100e9, 1e-12);
  EXPECT_EQ(e.steps[1].bottleneck, "/gpu:0 -> switch");  // and leave through it
}

TEST(AlphaBeta, SharedMemoryCountsEveryByteReadAndWritten) {
  Topology t;
  t.id = "one-memory";
  t.gpus_per_node = 2;
  t.fabric = Fabric::kSharedMemory;
  t.step_latency = 1e-6;
  t.memory.copy_all = t.memory.reduce_all = BandwidthCurve(10e9);
  const double s = 10 * kMiB;
  // Ring on 2: one reduce step (2 ranks x 3 x S/2) and one copy step (2 x 2 x S/2) through 10 GB/s.
  const Estimate e = estimate(ring_schedule(2, s), t);
  EXPECT_NEAR(e.seconds, 2e-6 + (3 * s + 2 * s) / 10e9, 1e-12);
  EXPECT_EQ(e.steps[0].bottleneck, "memory");
}

// Each load says where its bytes travel, so the GUI can draw them on the link they cross.
TEST(AlphaBeta, EachLoadNamesTheEndsOfItsLink) {
  const double s = 8 * kMiB;
  // A ring step on a switch of 4: every port carries one chunk up and one down.
  const Estimate ring = estimate(ring_schedule(4, s), switch_of(4, 100, 1));
  std::map<std::pair<int, int>, double> links;
  for (const LinkLoad& l : ring.steps[0].loads) {
    if (l.kind == ResourceKind::kLink) links[{l.from, l.to}] += l.bytes;
  }
  ASSERT_EQ(links.size(), 8u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ((links[{r, kSwitch}]), s / 4) << r;
    EXPECT_DOUBLE_EQ((links[{kSwitch, r}]), s / 4) << r;
  }
  // Bridged pairs: 0 and 1 share a bridge; 1 to 2 goes up to the host and down from it.
  Topology pairs = switch_of(4, 100, 1);
  pairs.fabric = Fabric::kPairs;
  pairs.host_link = {1e-6, 25e9};
  const Estimate r2o = estimate(reduce_to_one_schedule(4, s, 1), pairs);
  std::map<std::string, LinkLoad> by_name;
  for (const LinkLoad& l : r2o.steps[0].loads) by_name[l.resource] = l;
  const LinkLoad& bridge = by_name.at("bridge /gpu:0 -> /gpu:1");
  EXPECT_EQ(std::tie(bridge.kind, bridge.from, bridge.to),
            std::make_tuple(ResourceKind::kLink, 0, 1));
  EXPECT_EQ(std::make_pair(by_name.at("/gpu:2 -> host").from, by_name.at("/gpu:2 -> host").to),
            std::make_pair(2, kHost));
  EXPECT_EQ(std::make_pair(by_name.at("host -> /gpu:1").from, by_name.at("host -> /gpu:1").to),
            std::make_pair(kHost, 1));
  EXPECT_DOUBLE_EQ(by_name.at("host -> /gpu:1").bytes, 2 * s);  // from 2 and 3
  // The engine that reduces into /gpu:1 is its own.
  EXPECT_EQ(by_name.at("/gpu:1 engine").kind, ResourceKind::kEngine);
  EXPECT_EQ(by_name.at("/gpu:1 engine").from, 1);
  // Two nodes of 2: the tree's step across nodes leaves through one adapter, enters another.
  Topology nodes = switch_of(2, 100, 1);
  nodes.nodes = 2;
  nodes.network = {5e-6, 50e9};
  bool crossed = false;
  const Estimate tree = estimate(tree_schedule(4, 2, s), nodes);
  for (const StepEstimate& step : tree.steps) {
    for (const LinkLoad& l : step.loads) {
      if (l.resource == "node 1 /gpu:0 network out") {
        EXPECT_EQ(std::make_pair(l.from, l.to), std::make_pair(2, kNetwork));
        crossed = true;
      }
      if (l.resource == "node 0 /gpu:0 network in") {
        EXPECT_EQ(std::make_pair(l.from, l.to), std::make_pair(kNetwork, 0));
      }
    }
  }
  EXPECT_TRUE(crossed);
  // One shared memory with 2 cores for 4 ranks: /gpu:2's work runs on /gpu:0's core.
  Topology shared;
  shared.gpus_per_node = 4;
  shared.fabric = Fabric::kSharedMemory;
  shared.memory.copy_all = shared.memory.reduce_all = BandwidthCurve(10e9);
  shared.memory.engines = 2;
  const Estimate on_cores = estimate(ring_schedule(4, s), shared);
  for (const LinkLoad& l : on_cores.steps[0].loads) {
    if (l.resource == "/gpu:0+/gpu:2 core") {
      EXPECT_EQ(std::make_tuple(l.kind, l.from, l.to),
                std::make_tuple(ResourceKind::kEngine, 0, 0));
    } else if (l.resource == "memory") {
      EXPECT_EQ(l.kind, ResourceKind::kMemory);
    } else {
      EXPECT_EQ(l.resource, "/gpu:1+/gpu:3 core");
      EXPECT_EQ(l.from, 1);
    }
  }
}

NcclMachine h100_node() {
  NcclMachine m;
  m.compute_capability = 90;
  m.nvlink = true;
  m.channels = 16;
  m.channel_gbs = 23.1;
  m.nvls = true;
  return m;
}

const NcclCost& cost_of(const std::vector<NcclCost>& costs, NcclAlgorithm a, NcclProtocol p) {
  for (const NcclCost& c : costs) {
    if (c.algorithm == a && c.protocol == p) return c;
  }
  throw std::runtime_error("not considered");
}

TEST(NcclModel, LatenciesOfEightGpusOnNvlinkAreTuningCcs) {
  const auto costs = nccl_costs(h100_node(), 8, 1, 1024);
  // Worked by hand from NCCL's base and NVLink latencies: ring 2(n-1) hops, tree a chain of 7
  // up and down, NVLS its own 25 us.
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kRing, NcclProtocol::kLL).latency_us, 15.0, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kRing, NcclProtocol::kLL128).latency_us, 40.6, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kRing, NcclProtocol::kSimple).latency_us, 56.0, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kTree, NcclProtocol::kLL).latency_us, 15.2, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kTree, NcclProtocol::kLL128).latency_us, 31.5, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kTree, NcclProtocol::kSimple).latency_us, 64.4, 1e-9);
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kNvls, NcclProtocol::kSimple).latency_us, 25.0, 1e-9);
  // Ring Simple's bandwidth: 16 x 23.1 GB/s of bus bandwidth, S/t = busbw / (2(n-1)/n).
  EXPECT_NEAR(cost_of(costs, NcclAlgorithm::kRing, NcclProtocol::kSimple).algbw_gbs,
              16 * 23.1 / busbw_factor(8), 1e-9);
}

TEST(NcclModel, PicksLowLatencyProtocolsForSmallSizesAndSimpleForLarge) {
  const NcclMachine m = h100_node();
  const NcclCost small = nccl_choice(m, 8, 1, 1024);
  EXPECT_EQ(small.protocol, NcclProtocol::kLL);
  EXPECT_EQ(small.algorithm, NcclAlgorithm::kRing);  // 15.0 us against the tree's 15.2
  const NcclCost large = nccl_choice(m, 8, 1, 1024 * kMiB);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
  EXPECT_EQ(large.algorithm, NcclAlgorithm::kNvls);
  NcclMachine no_switch = m;
  no_switch.nvls = false;
  EXPECT_EQ(nccl_choice(no_switch, 8, 1, 1024 * kMiB).algorithm, NcclAlgorithm::kRing);
  // Over PCIe there is no LL128 (it needs NVLink).
  NcclMachine pcie = no_switch;
  pcie.nvlink = false;
  for (const NcclCost& c : nccl_costs(pcie, 2, 1, kMiB))
    EXPECT_NE(c.protocol, NcclProtocol::kLL128);
  EXPECT_THROW(nccl_costs(m, 1, 1, kMiB), std::invalid_argument);
  EXPECT_THROW(nccl_costs(m, 8, 1, std::nan("")), std::invalid_argument);
}

TEST(TopologyFile, EveryPresetReadsAndSaysWhereItsNumbersComeFrom) {
  const std::vector<Topology> presets = load_topologies(default_topology_folder());
  ASSERT_GE(presets.size(), 5u);
  for (const Topology& t : presets) {
    EXPECT_GT(t.source.size(), 80u) << t.id;
    // Written out and read back, it times a ring the same.
    const Topology again = parse_topology(write_topology(t), "again.toml");
    const int n = t.ranks();
    const double a = estimate(ring_schedule(n, 32 * kMiB), t).seconds;
    EXPECT_NEAR(estimate(ring_schedule(n, 32 * kMiB), again).seconds, a, a * 1e-6) << t.id;
    // Its compute too: every preset prices a step's kernels, and says where from.
    ASSERT_TRUE(t.compute.given()) << t.id;
    EXPECT_GT(t.compute.source.size(), 80u) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.launch, t.compute.launch) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.host, t.compute.host) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.rate, t.compute.rate) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.bandwidth, t.compute.bandwidth) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.peak_fp32, t.compute.peak_fp32) << t.id;
    EXPECT_DOUBLE_EQ(again.compute.peak_tf32, t.compute.peak_tf32) << t.id;
    EXPECT_EQ(again.compute.source, t.compute.source) << t.id;
  }
  EXPECT_EQ(find_topology("dgx-h100").ranks(), 8);
  EXPECT_THROW(find_topology("dgx-h900"), std::invalid_argument);
}

// Found by fuzz_topology (fuzz/crashes/topology/text-starting-with-a-newline): a source that
// began with a newline was written as a multi-line literal string, whose first newline TOML
// drops, so the fit's file did not read back as it was written.
TEST(TopologyFile, TextWritesBackAsItWasWhateverItHolds) {
  Topology t = find_topology("pcie-2");
  for (const std::string& text :
       {std::string("\nstarts with a newline"), std::string("ends\n"),
        std::string("a \"quote\", a \\ and '''three'''"), std::string("tab\tbell\x07 del\x7F"),
        std::string("\u00e9t\u00e9")}) {
    t.title = t.source = text;
    const std::string written = write_topology(t);
    const Topology again = parse_topology(written, "again.toml");
    EXPECT_EQ(again.title, text) << written;
    EXPECT_EQ(again.source, text) << written;
    EXPECT_EQ(write_topology(again), written);
  }
}

void expect_refused(const std::string& text, int line, const std::string& words) {
  try {
    parse_topology(text, "bad.toml");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const TopologyError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.toml", 0), 0u) << e.what();
  }
}

TEST(TopologyFile, MalformedFilesAreRefusedWithTheLine) {
  const std::string head = "id = \"t\"\ntitle = \"T\"\nsource = \"s\"\ngpus_per_node = 2\n";
  const std::string ok = head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = 10\n";
  EXPECT_NO_THROW(parse_topology(ok, "ok.toml"));
  expect_refused(head + "fabric = \"mesh\"\n[memory]\nbandwidth_gbs = 10\n", 5,
                 "`fabric` is 'mesh', not one of switch, pairs, host or shared-memory");
  expect_refused(head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = nan\n", 7,
                 "`bandwidth_gbs` in [memory] is nan, not a finite number");
  expect_refused(head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = -3\n", 7,
                 "`bandwidth_gbs` in [memory] is -3, outside [0.001, 1e+05] GB/s");
  expect_refused(head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = \"fast\"\n", 7,
                 "`bandwidth_gbs` in [memory] is not a number");
  expect_refused(head + "fabric = \"switch\"\n[memory]\nbandwidth_gbs = 10\n", 0,
                 "[gpu_link] is missing");
  expect_refused(head + "fabric = \"shared-memory\"\ncolour = 1\n[memory]\nbandwidth_gbs = 1\n", 6,
                 "unknown key `colour`");
  expect_refused(head + "fabric = \"shared-memory\"\nnodse = 1\n[memory]\nbandwidth_gbs = 1\n", 6,
                 "unknown key `nodse`: did you mean `nodes`? (expected one of: id, title");
  expect_refused(head +
                     "fabric = \"shared-memory\"\n[memory]\ncopy = [[2, 1], [1, 1]]\n"
                     "reduce = [[1, 1]]\n",
                 7, "increasing");
  expect_refused(head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = inf\n", 7,
                 "is inf, not a finite number");
  // A curve's GB/s, once in bytes/s, overflowed to inf and the curve threw std::invalid_argument,
  // not a TopologyError naming the file and line (fuzz/crashes/topology/curve-bandwidth-...).
  const std::string curves = head + "fabric = \"shared-memory\"\n[memory]\n";
  expect_refused(curves + "copy = [[1, 1e300]]\nreduce = [[1, 1]]\n", 7,
                 "GB/s from 0.001 to 1e+05");
  expect_refused(curves + "copy = [[1, 1]]\nreduce = [[1, 1], [2, 1e-7]]\n", 8,
                 "GB/s from 0.001 to 1e+05");
  expect_refused(head + "fabric = \"shared-memory\"\n[memory]\nbandwidth_gbs = 1e300\n", 7,
                 "is 1e+300, outside [0.001, 1e+05] GB/s");
  // [compute]: every price given, each in range, nothing unknown.
  const std::string compute = ok + "[compute]\nsource = \"s\"\n";
  expect_refused(compute + "launch_us = 2\nhost_us = 40\nrate_tflops = 10\n", 0,
                 "`bandwidth_gbs` in [compute] is missing");
  expect_refused(compute + "launch_us = -2\nhost_us = 40\nrate_tflops = 10\nbandwidth_gbs = 1\n",
                 10, "`launch_us` in [compute] is -2");
  expect_refused(compute + "launch_us = 2\nhost_us = 40\nrate_tflops = nan\nbandwidth_gbs = 1\n",
                 12, "not a finite number");
  expect_refused(
      compute + "launch_us = 2\nhost_us = 4\nrate_tflops = 1\nbandwidth_gbs = 1\nx = 1\n", 14,
      "unknown key `x`");
  EXPECT_TRUE(parse_topology(compute + "launch_us = 2\nhost_us = 40\nrate_tflops = 10\n"
                                       "bandwidth_gbs = 900\n",
                             "ok.toml")
                  .compute.given());
  expect_refused("id = \"t\"\ntitle = \"T\"\nsource = \"s\"\ngpus_per_node = 1.5\n", 4,
                 "`gpus_per_node` is 1.5, not a whole number");
  expect_refused("id = \"t\"\ntitle = \"T\"\nsource = \"s\"\ngpus_per_node = 0\n", 4,
                 "`gpus_per_node` is 0, outside [1, 64]");
  expect_refused("", 0, "`id` is missing");
  expect_refused("id = \"t\"\ntitle = \n", 2, "not valid TOML");
  expect_refused("id = \"Big Machine\"\ntitle = \"T\"\nsource = \"s\"\n", 1, "lowercase");
  EXPECT_THROW(read_topology("/no/such/file.toml"), TopologyError);
}

// A number no machine has (a typo: 1e-300 for 1e3) is refused with the range a machine's can be
// in: `flops_tflops = 1e-300` was read, and the tables priced a step in times of 31 digits.
TEST(TopologyFile, NumbersNoMachineHasAreRefusedWithTheirRange) {
  const std::string head = "id = \"t\"\ntitle = \"T\"\nsource = \"s\"\ngpus_per_node = 2\n";
  const std::string memory = "[memory]\nbandwidth_gbs = 10\n";
  const std::string shared = head + "fabric = \"shared-memory\"\n";  // lines 1-5
  // Each as the reader says it (the shortest text that reads back).
  for (const auto& [flops, said] : {std::pair{"1e-300", "1e-300"}, std::pair{"0", "0"},
                                    std::pair{"0.0009", "9e-04"}, std::pair{"200000", "2e+05"}}) {
    expect_refused(shared + "flops_tflops = " + flops + "\n" + memory, 6,
                   "`flops_tflops` is " + std::string(said) + ", outside [0.001, 1e+05] TFLOP/s");
  }
  EXPECT_EQ(parse_topology(shared + "flops_tflops = 0.001\n" + memory, "ok.toml").flops, 1e9);
  EXPECT_EQ(parse_topology(shared + "flops_tflops = 100000\n" + memory, "ok.toml").flops, 1e17);
  expect_refused(shared + "call_latency_us = 2e6\n" + memory, 6,
                 "`call_latency_us` is 2e+06, outside [0, 1e+06] us");
  expect_refused(shared + "[memory]\nbandwidth_gbs = 1e-5\n", 7,
                 "`bandwidth_gbs` in [memory] is 1e-05, outside [0.001, 1e+05] GB/s");
  const std::string link = head + "fabric = \"switch\"\n[gpu_link]\n";  // lines 1-6
  expect_refused(link + "latency_us = 2\nbandwidth_gbs = 1e-300\n" + memory, 8,
                 "`bandwidth_gbs` in [gpu_link] is 1e-300, outside [0.001, 1e+05] GB/s");
  expect_refused(link + "latency_us = -1\nbandwidth_gbs = 400\n" + memory, 7,
                 "`latency_us` in [gpu_link] is -1, outside [0, 1e+06] us");
  // A curve's sizes are bytes: from 1 byte.
  expect_refused(shared + "[memory]\ncopy = [[1e-300, 1]]\nreduce = [[1, 1]]\n", 7,
                 "sizes from 1 to 1e+15 bytes, increasing");
  // NCCL's channels: a network channel of 1e-300 GB/s is none at all (0, which one node gives).
  const std::string nccl = shared + memory + "[nccl_model]\nchannels = 2\nchannel_gbs = 20\n";
  expect_refused(nccl + "network_channel_gbs = 1e-300\n", 11,
                 "`network_channel_gbs` in [nccl_model] is 1e-300, outside [0.001, 10000] GB/s "
                 "(or 0: none)");
  EXPECT_NO_THROW(parse_topology(nccl + "network_channel_gbs = 0\n", "ok.toml"));
  // Every preset is well inside.
  EXPECT_GE(load_topologies(default_topology_folder()).size(), 5u);
}

// The one-shot's kernels load and store every GPU's buffer, as mirrorlab's CUDA one-shot does
// (it is refused where two GPUs lack peer access): the model prices it only where a kernel can
// reach every GPU's memory, and says why not elsewhere; the other schedules run anywhere.
TEST(PeerAccess, TheOneShotRunsOnlyWhereEveryGpuReachesEveryOthersMemory) {
  const Topology pcie = find_topology("pcie-2");  // host fabric: no peer-to-peer
  const Topology dgx = find_topology("dgx-h100");
  const Topology two_nodes = find_topology("dgx-h100-2-nodes");
  EXPECT_FALSE(pcie.peer_access);
  EXPECT_TRUE(dgx.peer_access);
  EXPECT_TRUE(find_topology("laptop-4-logical").peer_access);
  const std::string no_peers = cannot_run(one_shot_schedule(2, kMiB), pcie);
  EXPECT_EQ(no_peers.rfind("cannot run on pcie-2: ", 0), 0u) << no_peers;
  EXPECT_NE(no_peers.find("(no peer access)"), std::string::npos) << no_peers;
  try {
    estimate(one_shot_schedule(2, kMiB), pcie);
    ADD_FAILURE() << "priced a one-shot without peer access";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(no_peers), std::string::npos) << e.what();
  }
  // Within one node of two it runs; across them it cannot.
  EXPECT_EQ(cannot_run(one_shot_schedule(8, kMiB), two_nodes), "");
  EXPECT_GT(estimate(one_shot_schedule(8, kMiB), two_nodes).seconds, 0);
  const std::string nodes = cannot_run(one_shot_schedule(16, kMiB), two_nodes);
  EXPECT_NE(nodes.find("across dgx-h100-2-nodes's nodes"), std::string::npos) << nodes;
  EXPECT_EQ(cannot_run(one_shot_schedule(8, kMiB), dgx), "");
  for (const Topology* t : {&pcie, &two_nodes}) {
    const int n = t->ranks();
    EXPECT_EQ(cannot_run(ring_schedule(n, kMiB), *t), "") << t->id;
    EXPECT_EQ(cannot_run(reduce_to_one_schedule(n, kMiB), *t), "") << t->id;
    EXPECT_EQ(cannot_run(one_shot_schedule(1, kMiB), *t), "") << t->id;  // nothing to reach
  }
  // In a file: left out, false on the host fabric only; given, as given; refused in one memory.
  const std::string head = "id = \"t\"\ntitle = \"T\"\nsource = \"s\"\ngpus_per_node = 2\n";
  const std::string link = "[gpu_link]\nlatency_us = 2\nbandwidth_gbs = 30\n";
  const std::string memory = "[memory]\nbandwidth_gbs = 10\n";
  EXPECT_FALSE(parse_topology(head + "fabric = \"host\"\n" + link + memory, "t").peer_access);
  EXPECT_TRUE(parse_topology(head + "fabric = \"switch\"\n" + link + memory, "t").peer_access);
  Topology host_p2p =
      parse_topology(head + "fabric = \"host\"\npeer_access = true\n" + link + memory, "t");
  EXPECT_TRUE(host_p2p.peer_access);
  EXPECT_EQ(cannot_run(one_shot_schedule(2, kMiB), host_p2p), "");
  EXPECT_TRUE(parse_topology(write_topology(host_p2p), "again").peer_access);
  host_p2p.fabric = Fabric::kSwitch;
  host_p2p.peer_access = false;
  EXPECT_FALSE(parse_topology(write_topology(host_p2p), "again").peer_access);
  expect_refused(head + "fabric = \"shared-memory\"\npeer_access = false\n" + memory, 6,
                 "cannot hold in one shared memory");
  expect_refused(head + "fabric = \"host\"\npeer_access = 1\n" + link + memory, 6, "`peer_access`");
}

TEST(TopologyFile, ADeviceOrAFolderIsRefusedNotReadForever) {
  for (const char* path : {"/dev/zero", "/tmp"}) {
    try {
      read_topology(path);
      ADD_FAILURE() << path << " was read";
    } catch (const TopologyError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace mirrorlab::timing
