// The training step's model (timing/step_time.h) on cases worked by hand: replicas taking turns
// on fewer engines than devices, a free all-reduce giving a linear speed-up, and the device after
// which another one stops paying for itself.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "timing/step_time.h"

namespace mirrorlab::timing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// As the table of algorithms gives them (virtualgpu/collectives/all_reduce_algorithms.h).
Schedule ring_of(int ranks, double bytes, int) { return ring_schedule(ranks, bytes); }

// A step's inputs without packs: one replica's compute, the engines, the batch per replica, and
// the seconds of it replicas sharing an engine spend at once.
StepInputs inputs(double replica_compute, int engines, double batch_per_replica,
                  double overlapped = 0) {
  StepInputs in;
  in.replica_compute = replica_compute;
  in.engines = engines;
  in.batch_per_replica = batch_per_replica;
  in.overlapped = overlapped;
  return in;
}

// A count of the table: `devices` devices whose all-reduce of the whole buffer takes `time`.
DeviceCount count(int devices, AllReduceTime time = {}) {
  DeviceCount c;
  c.devices = devices;
  c.all_reduce = time;
  return c;
}

// 1, 2, ... `devices` devices, all-reducing in no time.
std::vector<DeviceCount> free_all_reduce(int devices) {
  std::vector<DeviceCount> counts;
  for (int n = 1; n <= devices; ++n) counts.push_back(count(n));
  return counts;
}

TEST(StepTime, OnTwoEnginesFourDevicesTakeTwiceOneDevicesCompute) {
  const std::vector<StepTime> rows = step_times(inputs(0.010, 2, 64), free_all_reduce(4));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].replicas_per_engine, 1);
  EXPECT_EQ(rows[1].replicas_per_engine, 1);  // one replica per core
  EXPECT_EQ(rows[2].replicas_per_engine, 2);  // the third shares a core: ceil(3 / 2)
  EXPECT_EQ(rows[3].replicas_per_engine, 2);
  EXPECT_DOUBLE_EQ(rows[1].compute, 0.010);
  EXPECT_DOUBLE_EQ(rows[3].compute, 0.020);
  // 64 images in 10 ms alone; 128 in 10 ms on 2 cores; 192 in 20 ms; 256 in 20 ms.
  EXPECT_DOUBLE_EQ(rows[0].images_per_second, 6400);
  EXPECT_DOUBLE_EQ(rows[1].images_per_second, 12800);
  EXPECT_DOUBLE_EQ(rows[2].images_per_second, 9600);
  EXPECT_DOUBLE_EQ(rows[3].images_per_second, 12800);
  EXPECT_DOUBLE_EQ(rows[2].added, -0.5);  // the third device costs half a device
  EXPECT_DOUBLE_EQ(rows[3].speedup, 2);
  // The third device is the first that does not pay: stop at 2, though the fourth adds again.
  const StopPoint stop = where_adding_stops(rows);
  EXPECT_TRUE(stop.stopped);
  EXPECT_EQ(stop.devices, 2);
  EXPECT_EQ(stop.next, 3);
}

// Logical GPUs of one card (1 engine): what replicas do at once (their launches and host work)
// is paid once, the rest in turn.
TEST(StepTime, ReplicasSharingACardOverlapOnlyWhatTheyDoAtOnce) {
  const std::vector<StepTime> rows = step_times(inputs(0.010, 1, 64, 0.004), free_all_reduce(4));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3].replicas_per_engine, 4);
  EXPECT_DOUBLE_EQ(rows[0].compute, 0.010);
  EXPECT_DOUBLE_EQ(rows[1].compute, 0.016);  // 4 ms once, 6 ms twice
  EXPECT_DOUBLE_EQ(rows[3].compute, 0.028);
  EXPECT_DOUBLE_EQ(rows[3].speedup, 4 * 0.010 / 0.028);
  // Nothing overlapped: plain turns.
  EXPECT_DOUBLE_EQ(step_times(inputs(0.010, 1, 64), free_all_reduce(4))[3].compute, 0.040);
}

TEST(StepTime, AFreeAllReduceGivesALinearSpeedUp) {
  const std::vector<StepTime> rows = step_times(inputs(0.004, 0, 32), free_all_reduce(8));
  for (const StepTime& r : rows) {
    EXPECT_DOUBLE_EQ(r.seconds, 0.004) << r.devices;
    EXPECT_DOUBLE_EQ(r.speedup, r.devices);
    EXPECT_DOUBLE_EQ(r.added, 1);
  }
  const StopPoint stop = where_adding_stops(rows);
  EXPECT_FALSE(stop.stopped);
  EXPECT_EQ(stop.devices, 8);
}

TEST(StepTime, AnotherDeviceStopsPayingWhenItAddsLessThanHalfADevice) {
  // 10 ms of compute on GPUs of their own; all-reduces of 2, 6 and 12 ms on 2, 3 and 4.
  std::vector<DeviceCount> all_reduce = free_all_reduce(4);
  all_reduce[1].all_reduce.seconds = 0.002;
  all_reduce[2].all_reduce.seconds = 0.006;
  all_reduce[3].all_reduce.seconds = 0.012;
  const std::vector<StepTime> rows = step_times(inputs(0.010, 0, 64), all_reduce);
  // images/s: 64 / 10 ms = 6400; 128 / 12 ms = 10,667; 192 / 16 ms = 12,000; 256 / 22 ms.
  EXPECT_DOUBLE_EQ(rows[1].seconds, 0.012);
  EXPECT_NEAR(rows[1].images_per_second, 128 / 0.012, 1e-9);
  EXPECT_NEAR(rows[1].added, (128 / 0.012 - 6400) / 6400, 1e-12);   // 0.67: pays
  EXPECT_NEAR(rows[2].added, (12000 - 128 / 0.012) / 6400, 1e-12);  // 0.21: does not
  EXPECT_NEAR(rows[2].speedup, 12000.0 / 6400, 1e-12);
  const StopPoint stop = where_adding_stops(rows);
  EXPECT_TRUE(stop.stopped);
  EXPECT_EQ(stop.devices, 2);
  // With a lower bar the third pays too, and the fourth (256 / 22 ms = 11,636: fewer images/s
  // than 3) does not.
  EXPECT_EQ(where_adding_stops(rows, 0.2).devices, 3);
}

Topology switch_of(int gpus_per_node, int nodes) {
  Topology t;
  t.id = "test-switch";
  t.nodes = nodes;
  t.gpus_per_node = gpus_per_node;
  t.fabric = Fabric::kSwitch;
  t.gpu_link = {2e-6, 100e9};
  t.network = {5e-6, 25e9};
  t.memory.copy_all = t.memory.reduce_all = BandwidthCurve(1e15);  // memory never the limit
  t.flops = 50e12;
  return t;
}

TEST(StepTime, PastANodeTheCountsGoByWholeNodesAndEachDeviceIsWeighed) {
  EXPECT_EQ(device_counts(switch_of(8, 1), 8), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(device_counts(switch_of(8, 1), 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(device_counts(switch_of(4, 3), 12), (std::vector<int>{1, 2, 3, 4, 8, 12}));
  // From 4 to 8 devices: 4 more, so each brought a quarter of the growth. 10 ms of compute;
  // all-reduces of 0 on 1, 2 ms on 4 and 10 ms on 8 (across the network).
  const std::vector<StepTime> rows =
      step_times(inputs(0.010, 0, 64), {count(1), count(4, {0.002, ""}), count(8, {0.010, ""})});
  // images/s: 6400; 256 / 12 ms = 21,333; 512 / 20 ms = 25,600.
  EXPECT_NEAR(rows[1].added, (256 / 0.012 - 6400) / (3 * 6400.0), 1e-12);   // 0.78
  EXPECT_NEAR(rows[2].added, (25600 - 256 / 0.012) / (4 * 6400.0), 1e-12);  // 0.17
  const StopPoint stop = where_adding_stops(rows);
  EXPECT_EQ(stop.devices, 4);
  EXPECT_EQ(stop.next, 8);
}

TEST(StepTime, TheAllReduceIsTheModelsPrediction) {
  Topology t = switch_of(8, 1);
  const double s = 4 * kMiB;
  EXPECT_DOUBLE_EQ(all_reduce_time(t, ring_of, 1, s).seconds, 0);  // nothing to reduce
  // A ring on 4 of the 8: 6 steps of 2 us + (S / 4) / 100 GB/s.
  const AllReduceTime ring = all_reduce_time(t, ring_of, 4, s);
  EXPECT_NEAR(ring.seconds, 6 * (2e-6 + s / 4 / 100e9), 1e-12);
  EXPECT_NE(ring.how.find("-> switch"), std::string::npos) << ring.how;
  // NCCL: its own model's choice, on the nodes the devices fill (12 of 2 x 8: 2 nodes).
  EXPECT_THROW(all_reduce_time(t, nullptr, 4, s), std::invalid_argument);  // no NCCL here
  t = switch_of(8, 2);
  t.has_nccl = true;
  t.nccl.network_channel_gbs = 20;
  const NcclCost c = nccl_choice(t.nccl, 12, 2, s);
  const AllReduceTime nccl = all_reduce_time(t, nullptr, 12, s);
  EXPECT_DOUBLE_EQ(nccl.seconds, c.time_us * 1e-6);
  EXPECT_EQ(nccl.how, std::string(to_string(c.algorithm)) + " " + to_string(c.protocol));
  EXPECT_THROW(all_reduce_time(t, ring_of, 17, s), std::invalid_argument);
}

TEST(StepTime, PredictStepsPutsTheComputeBesideTheAllReduce) {
  const Topology t = switch_of(4, 1);
  const double bytes = 2 * kMiB;
  // The compute from FLOPs: 1e9 per step at 50 TFLOP/s is 20 us.
  const double compute = compute_seconds(1e9, t);
  EXPECT_DOUBLE_EQ(compute, 20e-6);
  const std::vector<StepTime> rows =
      predict_steps(t, reduce_to_one_schedule, bytes, inputs(compute, compute_engines(t), 64), 4);
  ASSERT_EQ(rows.size(), 4u);
  for (const StepTime& r : rows) {
    const double all_reduce = all_reduce_time(t, reduce_to_one_schedule, r.devices, bytes).seconds;
    EXPECT_DOUBLE_EQ(r.all_reduce, all_reduce);
    EXPECT_DOUBLE_EQ(r.seconds, compute + all_reduce);  // each GPU computes on its own
  }
  // On 4, reduce-to-one's destination takes 3 S in through its port, then sends 3 S out: two
  // steps of 2 us + 3 S / 100 GB/s (126 us with the latency 130 us), beside 20 us of compute.
  const double all_reduce_4 = 2 * (2e-6 + 3 * bytes / 100e9);
  EXPECT_NEAR(rows[3].seconds, 20e-6 + all_reduce_4, 1e-12);
  EXPECT_NEAR(rows[3].speedup, 4 * 20e-6 / (20e-6 + all_reduce_4), 1e-9);  // 0.53: slower
  EXPECT_EQ(where_adding_stops(rows).devices, 1);
}

TEST(StepTime, EnginesAndFlopsComeFromTheTopology) {
  Topology t = switch_of(4, 1);
  EXPECT_EQ(compute_engines(t), 0);  // GPUs of their own
  t.fabric = Fabric::kSharedMemory;
  EXPECT_EQ(compute_engines(t), 1);  // logical GPUs of one card share it
  t.memory.engines = 2;
  EXPECT_EQ(compute_engines(t), 2);  // CPU virtual GPUs on 2 cores
  t.flops = 0;
  EXPECT_THROW(compute_seconds(1e9, t), std::invalid_argument);
}

TEST(StepTime, RefusesWhatIsNotATime) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const double compute : {0.0, -1.0, nan, inf}) {
    EXPECT_THROW(step_times(inputs(compute, 0, 64), free_all_reduce(2)), std::invalid_argument)
        << compute;
  }
  EXPECT_THROW(step_times(inputs(0.01, 0, 0), free_all_reduce(2)), std::invalid_argument);
  EXPECT_THROW(step_times(inputs(0.01, -1, 64), free_all_reduce(2)), std::invalid_argument);
  // What overlaps is a part of the compute: not negative, not more than all of it.
  EXPECT_THROW(step_times(inputs(0.01, 1, 64, -1e-3), free_all_reduce(2)), std::invalid_argument);
  EXPECT_THROW(step_times(inputs(0.01, 1, 64, 0.02), free_all_reduce(2)), std::invalid_argument);
  EXPECT_THROW(step_times(inputs(0.01, 1, 64, nan), free_all_reduce(2)), std::invalid_argument);
  std::vector<DeviceCount> bad = free_all_reduce(2);
  bad[1].all_reduce.seconds = nan;
  EXPECT_THROW(step_times(inputs(0.01, 0, 64), bad), std::invalid_argument);
  bad[1].all_reduce.seconds = -1e-3;
  EXPECT_THROW(step_times(inputs(0.01, 0, 64), bad), std::invalid_argument);
  // Counts that do not start at 1, or do not grow.
  EXPECT_THROW(step_times(inputs(0.01, 0, 64), {count(2)}), std::invalid_argument);
  EXPECT_THROW(step_times(inputs(0.01, 0, 64), {count(1), count(3), count(3)}),
               std::invalid_argument);
  EXPECT_TRUE(step_times(inputs(0.01, 0, 64), {}).empty());
}

}  // namespace
}  // namespace mirrorlab::timing
