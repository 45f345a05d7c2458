// Fitting the timing model (timing/fit.h): a topology made from memory samples, the step latency
// recovered from all-reduces the model itself timed, samples that cannot be used refused, and the
// prediction table's error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "timing/fit.h"
#include "timing/topology_file.h"

namespace mirrorlab::timing {
namespace {

constexpr double kMiB = 1 << 20;

std::vector<MemorySample> two_levels() {
  // A cache up to 8 MiB at 80 GB/s (one engine 40), main memory from 16 MiB at 30 (one engine 15).
  return {{1 * kMiB, 40e9, 50e9, 80e9, 100e9},
          {8 * kMiB, 40e9, 50e9, 80e9, 100e9},
          {16 * kMiB, 15e9, 20e9, 30e9, 40e9}};
}

TEST(Fit, MemorySamplesBecomeASharedMemoryWithTheirCurves) {
  const Topology t = shared_memory_topology(two_levels(), 2);
  EXPECT_EQ(t.fabric, Fabric::kSharedMemory);
  EXPECT_EQ(t.memory.engines, 2);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 4 * kMiB), 40e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kReduce, 2, 64 * kMiB), 40e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 4, 1024 * kMiB), 30e9);  // flat past the end
  // Samples given out of order are sorted.
  const std::vector<MemorySample> samples = two_levels();
  const std::vector<MemorySample> reversed(samples.rbegin(), samples.rend());
  EXPECT_DOUBLE_EQ(shared_memory_topology(reversed, 2).memory.bandwidth(Work::kCopy, 1, 64 * kMiB),
                   15e9);
}

TEST(Fit, SizesThatTimedAKernelsLaunchTakeTheFirstSizeThatTimedTheMemory) {
  // As on a GPU: up to 4 MiB every pass took its launch, 10 us, whatever its bytes (105 to 419
  // GB/s); from 8 MiB the memory's 800 GB/s (10.5 us at 8 MiB: still about a launch, so 4 MiB
  // is one too; 16 MiB takes twice as long as 8). The memory is at least that fast below 8 MiB.
  std::vector<MemorySample> samples;
  for (double mib : {1.0, 2.0, 4.0}) {
    const double bw = mib * kMiB / 10e-6;
    samples.push_back({mib * kMiB, bw, bw, bw, bw});
  }
  samples.push_back({8 * kMiB, 800e9, 800e9, 800e9, 800e9});
  samples.push_back({16 * kMiB, 800e9, 800e9, 800e9, 800e9});
  samples.push_back({32 * kMiB, 700e9, 700e9, 700e9, 700e9});
  const Topology t = shared_memory_topology(samples, 0);
  for (double mib : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, mib * kMiB), 800e9) << mib << " MiB";
    EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kReduce, 4, mib * kMiB), 800e9) << mib << " MiB";
  }
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 32 * kMiB), 700e9);
  // A memory's own rise a little faster at the next size is noise, not a launch (its time still
  // grew by 1.8 times): averaged with its neighbour, as before, not raised to it.
  const Topology noisy = shared_memory_topology({{1 * kMiB, 40e9, 40e9, 40e9, 40e9},
                                                 {2 * kMiB, 44e9, 44e9, 44e9, 44e9},
                                                 {4 * kMiB, 30e9, 30e9, 30e9, 30e9}},
                                                2);
  EXPECT_DOUBLE_EQ(noisy.memory.bandwidth(Work::kCopy, 1, 1 * kMiB), 42e9);
  EXPECT_DOUBLE_EQ(noisy.memory.bandwidth(Work::kCopy, 1, 2 * kMiB), 42e9);
  EXPECT_DOUBLE_EQ(noisy.memory.bandwidth(Work::kCopy, 1, 4 * kMiB), 30e9);
}

TEST(Fit, TheWorkingSetOfOneSharedMemoryIsEveryRanksBuffer) {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 4;
  // 4 ranks of 4 MiB hold 16 MiB: past the 8 MiB cache, so main memory's bandwidth. The
  // destination alone reduces 3 buffers (3 x 3 x 4 MiB at 20 GB/s). Then 3 copies: /gpu:1 and
  // /gpu:3 share the second of the 2 cores, which copies 2 x 2 x 4 MiB at one core's 15 GB/s,
  // longer than the 3 x 2 x 4 MiB all of them move at the memory's 30 GB/s.
  const Estimate e = estimate(reduce_to_one_schedule(4, 4 * kMiB), t);
  ASSERT_EQ(e.steps.size(), 2u);
  EXPECT_NEAR(e.steps[0].seconds, 36 * kMiB / 20e9, 1e-12);
  EXPECT_NEAR(e.steps[1].seconds, 16 * kMiB / 15e9, 1e-12);
  EXPECT_EQ(e.steps[1].bottleneck, "/gpu:1+/gpu:3 core");
}

TEST(Fit, AStepReadsTheCurvesBetweenTheBytesItTouchesAndEveryBuffer) {
  // Worked by hand, S = 4 MiB on 4 ranks: a ring's step moves 4 chunks of 1 MiB, each read from
  // one buffer and written into another: 8 MiB, half of the 16 MiB every buffer holds, which the
  // ring cycles through step after step. The curves are read at the geometric mean: 11.3 MiB.
  const double S = 4 * kMiB;
  const Schedule ring = ring_schedule(4, S);
  for (const ScheduleStep& step : ring.steps) {
    EXPECT_DOUBLE_EQ(step_working_set(ring, step, true), std::sqrt(8.0 * 16.0) * kMiB);
  }
  // Reduce-to-one's steps and the one-shot's touch every buffer: 3 sources and the destination
  // (the destination counted once), 4 x 4 MiB.
  const Schedule to_one = reduce_to_one_schedule(4, S);
  for (const ScheduleStep& step : to_one.steps) {
    EXPECT_DOUBLE_EQ(step_working_set(to_one, step, true), 16 * kMiB);
  }
  const Schedule one_shot = one_shot_schedule(4, S);
  EXPECT_DOUBLE_EQ(step_working_set(one_shot, one_shot.steps[0], true), 16 * kMiB);
  // On 2 ranks the ring's step touches both buffers whole.
  const Schedule ring2 = ring_schedule(2, S);
  EXPECT_DOUBLE_EQ(step_working_set(ring2, ring2.steps[0], true), 8 * kMiB);
  // A GPU's own memory holds its one buffer, whatever the step.
  EXPECT_DOUBLE_EQ(step_working_set(ring, ring.steps[0], false), S);

  // So the 4-rank ring of 2 MiB reads a two-level memory at 5.7 MiB, inside the 8 MiB cache
  // (two_levels(): the cache's bandwidth up to 8 MiB), though its 8 MiB of buffers fill it; the
  // ring of 4 MiB at 11.3 MiB, past it: more than twice as long a step.
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 4;
  const Estimate inside = estimate(ring_schedule(4, 2 * kMiB), t);
  const Estimate past = estimate(ring, t);
  EXPECT_LT(inside.steps[0].seconds * 2, past.steps[0].seconds);
}

TEST(Fit, ReadsAndWritesInPlaceArePricedAtTheAddKernelsBandwidth) {
  // The one-shot on 2 ranks of 64 MiB, past two_levels()'s cache: each rank reads its half of
  // both buffers and writes the sum back where it read it, 2 x 64 MiB through its core; both
  // cores together 4 x 64 MiB. A write into a line just read pays no write-allocate read, as the
  // add kernel (b += a) does not, so the add curves price it (one core 20 GB/s, both 40), not the
  // copy's (15 and 30): 128 MiB / 20 GB/s.
  const Topology t = shared_memory_topology(two_levels(), 2);
  const Estimate e = estimate(one_shot_schedule(2, 64 * kMiB), t);
  ASSERT_EQ(e.steps.size(), 1u);
  EXPECT_NEAR(e.steps[0].seconds - e.steps[0].latency, 128 * kMiB / 20e9, 1e-12);
  // A ring's copies (all-gather) write into buffers not in the cache: the copy curve.
  const Estimate ring = estimate(ring_schedule(2, 64 * kMiB), t);
  ASSERT_EQ(ring.steps.size(), 2u);
  EXPECT_EQ(ring.steps[1].phase, "all-gather");
  // Each core copies its 32 MiB chunk (64 MiB read and written) at 15 GB/s.
  EXPECT_NEAR(ring.steps[1].seconds - ring.steps[1].latency, 64 * kMiB / 15e9, 1e-12);
}

TEST(Fit, TheMemoryNowIsComparedWithTheFitAtItsWorkingSet) {
  const Topology t = shared_memory_topology(two_levels(), 2);
  // At 64 MiB the fit has 15 / 20 GB/s for one engine, 30 / 40 for all (two_levels()).
  EXPECT_NEAR(memory_drift(t, {64 * kMiB, 15e9, 20e9, 30e9, 40e9}), 0, 1e-12);
  EXPECT_NEAR(memory_drift(t, {64 * kMiB, 12e9, 16e9, 24e9, 32e9}), -0.2, 1e-12);
  // The mean of the four: one engine 10% faster, all of them as fitted.
  EXPECT_NEAR(memory_drift(t, {64 * kMiB, 16.5e9, 22e9, 30e9, 40e9}), 0.05, 1e-12);
  // Inside the cache, the cache's curves.
  EXPECT_NEAR(memory_drift(t, {4 * kMiB, 20e9, 25e9, 40e9, 50e9}), -0.5, 1e-12);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(memory_drift(t, {64 * kMiB, nan, 20e9, 30e9, 40e9}), std::invalid_argument);
  EXPECT_THROW(memory_drift(t, {64 * kMiB, 0, 20e9, 30e9, 40e9}), std::invalid_argument);
  EXPECT_THROW(memory_drift(t, {-1, 15e9, 20e9, 30e9, 40e9}), std::invalid_argument);
  EXPECT_THROW(memory_drift(Topology{}, {64 * kMiB, 15e9, 20e9, 30e9, 40e9}),
               std::invalid_argument);
}

// Reduce-to-one, the ring (and the one-shot) at 4 to 64 KiB on 2 and 4 ranks, timed as `truth`.
std::vector<AllReduceSample> timed_by(const Topology& truth, bool one_shot) {
  std::vector<AllReduceSample> samples;
  for (double bytes : {4096.0, 16384.0, 65536.0}) {
    for (int n : {2, 4}) {
      std::vector<Schedule> schedules{reduce_to_one_schedule(n, bytes), ring_schedule(n, bytes)};
      if (one_shot) schedules.push_back(one_shot_schedule(n, bytes));
      for (const Schedule& s : schedules) samples.push_back({"x", s, estimate(s, truth).seconds});
    }
  }
  return samples;
}

Topology four_ranks() {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 4;
  return t;
}

TEST(Fit, RecoversBothLatenciesOfAllReducesTheModelTimed) {
  const Topology t = four_ranks();
  Topology truth = t;
  truth.step_latency = 30e-6;
  truth.call_latency = 45e-6;
  std::vector<AllReduceSample> samples = timed_by(truth, false);
  Latencies fitted = fit_latencies(t, samples);
  EXPECT_NEAR(fitted.call, 45e-6, 1e-12);
  EXPECT_NEAR(fitted.step, 30e-6, 1e-12);
  EXPECT_NEAR(fitted.move, 0.0, 1e-12);
  // Times below what the bandwidth alone takes cannot give a negative latency.
  for (AllReduceSample& s : samples) s.seconds = 1e-9;
  fitted = fit_latencies(t, samples);
  EXPECT_EQ(fitted.call, 0.0);
  EXPECT_EQ(fitted.step, 0.0);
  EXPECT_EQ(fit_latencies(t, {}).step, 0.0);
}

// A step's moves each cost their own latency (on CUDA devices the host queues and waits for each
// in turn): algorithms with as many steps but more moves a step tell it from the step's.
TEST(Fit, RecoversTheMovesLatencyBesideTheStepsAndTheCalls) {
  const Topology t = four_ranks();
  Topology truth = t;
  truth.step_latency = 20e-6;
  truth.move_latency = 25e-6;
  truth.call_latency = 40e-6;
  const Latencies fitted = fit_latencies(t, timed_by(truth, true));
  EXPECT_NEAR(fitted.call, 40e-6, 1e-11);
  EXPECT_NEAR(fitted.step, 20e-6, 1e-11);
  EXPECT_NEAR(fitted.move, 25e-6, 1e-11);
  // By hand: the ring on 4 ranks has 6 steps of 4 moves: 40 + 6 x 20 + 24 x 25 us of latency.
  const Schedule ring = ring_schedule(4, 4096.0);
  EXPECT_NEAR(estimate(ring, truth).seconds - estimate(ring, t).seconds, 760e-6, 1e-12);
}

TEST(Fit, OneNumberOfStepsCannotTellTheLatenciesApart) {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 2;
  Topology truth = t;
  truth.step_latency = 30e-6;
  std::vector<AllReduceSample> samples;  // reduce-to-one and the ring on 2 ranks: 2 steps each
  for (double bytes : {4096.0, 65536.0}) {
    for (const Schedule& s : {reduce_to_one_schedule(2, bytes), ring_schedule(2, bytes)}) {
      samples.push_back({"x", s, estimate(s, truth).seconds});
    }
  }
  // Any C + 2L = 60 us fits; the step's latency alone is the one taken.
  const Latencies fitted = fit_latencies(t, samples);
  EXPECT_EQ(fitted.call, 0.0);
  EXPECT_NEAR(fitted.step, 30e-6, 1e-12);
}

TEST(Fit, TheCallLatencyIsPaidOnceAnAllReduce) {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 4;
  Topology with = t;
  with.call_latency = 45e-6;
  for (int n : {2, 4}) {
    const Schedule ring = ring_schedule(n, 1 * kMiB);  // 2(n-1) steps, one call
    const Estimate e = estimate(ring, with);
    EXPECT_NEAR(e.seconds - estimate(ring, t).seconds, 45e-6, 1e-12) << n;
    EXPECT_EQ(e.call_latency, 45e-6);
  }
  // One rank has nothing to all-reduce: no steps, no call.
  EXPECT_EQ(estimate(ring_schedule(1, 1 * kMiB), with).seconds, 0.0);
}

// Peer curves rise (the writer's private cache, then a shared one), then fall; the memory's own
// curves only fall. A size out of its curve's shape is averaged with its neighbour.
TEST(Fit, PeerCurvesRiseThenFallOwnCurvesOnlyFall) {
  std::vector<MemorySample> samples = two_levels();
  const double peer[] = {20e9, 60e9, 50e9};  // rises from 1 to 8 MiB, falls at 16
  for (int i = 0; i < 3; ++i) {
    samples[i].copy_peer_one = samples[i].reduce_peer_one = peer[i];
    samples[i].copy_peer_all = samples[i].reduce_peer_all = 2 * peer[i];
  }
  samples[1].copy_one = 50e9;  // faster at 8 MiB than at 1 MiB (40): averaged to 45 both
  const Topology t = shared_memory_topology(samples, 2);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 1 * kMiB, true), 20e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 8 * kMiB, true), 60e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 16 * kMiB, true), 50e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kReduce, 2, 8 * kMiB, true), 120e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 1 * kMiB), 45e9);
  EXPECT_DOUBLE_EQ(t.memory.bandwidth(Work::kCopy, 1, 8 * kMiB), 45e9);
  // A dip in the rise (60, 40, 80 rising) is averaged with the size before it: 50, 50, 80.
  const double dip[] = {60e9, 40e9, 80e9};
  for (int i = 0; i < 3; ++i) {
    samples[i].copy_peer_one = samples[i].reduce_peer_one = dip[i];
  }
  const Topology d = shared_memory_topology(samples, 2);
  EXPECT_DOUBLE_EQ(d.memory.bandwidth(Work::kCopy, 1, 1 * kMiB, true), 50e9);
  EXPECT_DOUBLE_EQ(d.memory.bandwidth(Work::kCopy, 1, 8 * kMiB, true), 50e9);
  EXPECT_DOUBLE_EQ(d.memory.bandwidth(Work::kCopy, 1, 16 * kMiB, true), 80e9);
}

// Moves between ranks on different cores read what another core wrote (the peer curves); a
// reduce-to-one's broadcast reads the sum its destination just wrote.
TEST(Fit, MovesBetweenCoresArePricedAtThePeerCurves) {
  std::vector<MemorySample> samples = two_levels();
  for (MemorySample& s : samples) {
    s.copy_peer_one = s.reduce_peer_one = 10e9;
    s.copy_peer_all = s.reduce_peer_all = 20e9;
  }
  Topology t = shared_memory_topology(samples, 2);
  t.gpus_per_node = 2;
  const Estimate e = estimate(reduce_to_one_schedule(2, 1 * kMiB), t);
  ASSERT_EQ(e.steps.size(), 2u);
  // Reduce: /gpu:0 adds /gpu:1's buffer, 3 MiB of traffic at 10 GB/s; broadcast: 2 MiB.
  EXPECT_NEAR(e.steps[0].seconds, 3 * kMiB / 10e9, 1e-12);
  EXPECT_NEAR(e.steps[1].seconds, 2 * kMiB / 10e9, 1e-12);
  // Without peer curves, the memory's own: 3 MiB at 50 GB/s, 2 MiB at 40 GB/s.
  const Topology own = [&] {
    Topology o = shared_memory_topology(two_levels(), 2);
    o.gpus_per_node = 2;
    return o;
  }();
  const Estimate f = estimate(reduce_to_one_schedule(2, 1 * kMiB), own);
  EXPECT_NEAR(f.steps[0].seconds, 3 * kMiB / 50e9, 1e-12);
  EXPECT_NEAR(f.steps[1].seconds, 2 * kMiB / 40e9, 1e-12);
}

TEST(Fit, PredictionsSayTheirErrorAndTheSlowestStep) {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.gpus_per_node = 2;
  const Schedule s = reduce_to_one_schedule(2, 64 * kMiB);
  const double predicted = estimate(s, t).seconds;
  const std::vector<Prediction> p = predict(t, {{"reduce-to-one", s, predicted / 1.25}});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NEAR(p[0].error(), 0.25, 1e-12);
  EXPECT_EQ(p[0].ranks, 2);
  // The reduce (3 x 64 MiB at 20 GB/s) is slower than the copy (2 x 64 MiB at 15 GB/s).
  EXPECT_EQ(p[0].bottleneck, "reduce: /gpu:0 engine");
}

TEST(Fit, SamplesThatCannotBeUsedAreRefused) {
  EXPECT_THROW(shared_memory_topology({}, 2), std::invalid_argument);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    std::vector<MemorySample> samples = two_levels();
    samples[1].reduce_all = bad;
    EXPECT_THROW(shared_memory_topology(samples, 2), std::invalid_argument) << bad;
    samples = two_levels();
    samples[0].bytes = bad;
    EXPECT_THROW(shared_memory_topology(samples, 2), std::invalid_argument) << bad;
  }
  EXPECT_THROW(shared_memory_topology(two_levels(), -1), std::invalid_argument);
}

TEST(Fit, AFittedTopologyIsWrittenAndReadBackTheSame) {
  Topology t = shared_memory_topology(two_levels(), 2);
  t.id = kFittedTopologyId;
  t.title = "4 CPU virtual GPUs on this machine (fitted)";
  t.source = "a test";
  t.gpus_per_node = 4;
  t.step_latency = 42e-6;
  t.move_latency = 7e-6;
  t.call_latency = 51e-6;
  const Topology back = parse_topology(write_topology(t), "fit.toml");
  EXPECT_EQ(back.id, kFittedTopologyId);
  EXPECT_EQ(back.fabric, Fabric::kSharedMemory);
  EXPECT_NEAR(back.step_latency, 42e-6, 1e-12);
  EXPECT_NEAR(back.move_latency, 7e-6, 1e-12);
  EXPECT_NEAR(back.call_latency, 51e-6, 1e-12);
  EXPECT_EQ(back.memory.engines, 2);
  for (double bytes : {1 * kMiB, 20 * kMiB, 100 * kMiB}) {
    for (int active : {1, 2}) {
      EXPECT_NEAR(back.memory.bandwidth(Work::kReduce, active, bytes),
                  t.memory.bandwidth(Work::kReduce, active, bytes), 1e3);
    }
  }
}

}  // namespace
}  // namespace mirrorlab::timing
