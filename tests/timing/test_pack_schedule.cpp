// The timing model's packs (timing/pack_schedule.h): each pack all-reduced after backward wrote
// it, one after another; what overlap hides, and what it cannot.
#include <gtest/gtest.h>

#include <stdexcept>

#include "timing/pack_schedule.h"
#include "timing/step_time.h"
#include "timing/topology.h"
#include "timing/topology_file.h"

namespace mirrorlab {
namespace {

using timing::PackWork;

// Three packs written at 10%, 40% and 100% of a 10 ms backward, 2 ms of all-reduce each.
const std::vector<PackWork> kPacks = {{1000, 0.1}, {1000, 0.4}, {1000, 1.0}};
const std::vector<double> kTwoMs = {2e-3, 2e-3, 2e-3};

TEST(PackSchedule, OverlapHidesThePacksWrittenBeforeBackwardEnds) {
  const timing::PackedAllReduce p = timing::pack_all_reduce(kPacks, 10e-3, kTwoMs, true, 1.0);
  EXPECT_DOUBLE_EQ(p.all_reduce, 6e-3);
  EXPECT_NEAR(p.start[0], 1e-3, 1e-12);   // as backward wrote it
  EXPECT_NEAR(p.finish[1], 6e-3, 1e-12);  // started at 4 ms
  EXPECT_NEAR(p.start[2], 10e-3, 1e-12);  // the last is written as backward ends
  EXPECT_NEAR(p.exposed, 2e-3, 1e-12);    // only it is left
  EXPECT_NEAR(p.hidden(), 4e-3, 1e-12);
}

TEST(PackSchedule, WithoutOverlapOrWithoutSpareHardwareNothingIsHidden) {
  const timing::PackedAllReduce off = timing::pack_all_reduce(kPacks, 10e-3, kTwoMs, false, 1.0);
  EXPECT_NEAR(off.exposed, 6e-3, 1e-12);
  EXPECT_NEAR(off.start[0], 10e-3, 1e-12);
  // Sharing every core with backward: the lane makes no progress until backward ends.
  const timing::PackedAllReduce busy = timing::pack_all_reduce(kPacks, 10e-3, kTwoMs, true, 0.0);
  EXPECT_NEAR(busy.exposed, 6e-3, 1e-12);
  // Half speed beside backward: the first pack takes 4 ms from 1 ms; the second, from 5 ms at
  // half speed, is done at 9 ms, before backward ends; the third runs after it.
  const timing::PackedAllReduce half = timing::pack_all_reduce(kPacks, 10e-3, kTwoMs, true, 0.5);
  EXPECT_NEAR(half.finish[0], 5e-3, 1e-12);
  EXPECT_NEAR(half.finish[1], 9e-3, 1e-12);
  EXPECT_NEAR(half.exposed, 2e-3, 1e-12);
}

TEST(PackSchedule, ALaneStillBusyDelaysTheNextPack) {
  // All written at once early: they queue behind each other.
  const timing::PackedAllReduce p = timing::pack_all_reduce({{10, 0.0}, {10, 0.0}, {10, 0.0}}, 1e-3,
                                                            {1e-3, 1e-3, 1e-3}, true, 1.0);
  EXPECT_NEAR(p.start[1], 1e-3, 1e-12);
  EXPECT_NEAR(p.exposed, 2e-3, 1e-12);
}

TEST(PackSchedule, BadInputIsRefusedWithASentence) {
  EXPECT_THROW(timing::pack_all_reduce({}, 1, {}, true, 1), std::invalid_argument);
  EXPECT_THROW(timing::pack_all_reduce(kPacks, 1, {1, 1}, true, 1), std::invalid_argument);
  EXPECT_THROW(timing::pack_all_reduce({{1, 0.5}, {1, 0.2}}, 1, {1, 1}, true, 1),
               std::invalid_argument);
  EXPECT_THROW(timing::pack_all_reduce(kPacks, -1, kTwoMs, true, 1), std::invalid_argument);
  EXPECT_THROW(timing::pack_all_reduce(kPacks, 1, kTwoMs, true, 1.5), std::invalid_argument);
}

// On GPUs overlap hides the packs written early; on CPU-backed devices that fill the cores with
// backward, the model predicts nothing hidden.
TEST(PackSchedule, TheStepOnAPresetHidesWhatThisMachineCannot) {
  timing::StepInputs in;
  in.replica_compute = 10e-3;
  in.batch_per_replica = 64;
  in.packs = kPacks;
  in.backward = 6e-3;
  const timing::Topology gpus = timing::find_topology("dgx-h100");
  const auto rows = timing::predict_steps(gpus, nullptr, 3000, in, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_LT(rows[1].all_reduce, rows[1].all_reduce_total);
  EXPECT_EQ(timing::communication_concurrency(gpus, 8), 1.0);
  timing::Topology cores = gpus;
  cores.fabric = timing::Fabric::kSharedMemory;
  cores.memory.engines = 2;
  EXPECT_EQ(timing::communication_concurrency(cores, 2), 0.0);
  EXPECT_EQ(timing::communication_concurrency(cores, 1), 1.0);
}

}  // namespace
}  // namespace mirrorlab
