// What a run's events say about packs and backward: how much all-reduce time hid behind
// backward, and whether each step's first pack was asked for while backward still ran. Events
// made by hand, with times in milliseconds, so each rule is seen on its own.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "core/strategy/events/run_events.h"

namespace mirrorlab {
namespace {

core::RunEvent event(int device, core::Phase phase, std::int64_t step, int begin_ms, int end_ms,
                     core::Lane lane = core::Lane::kCompute) {
  const vgpu::TimePoint zero{};
  core::RunEvent e;
  e.device = device;
  e.phase = phase;
  e.step = step;
  e.begin = zero + std::chrono::milliseconds(begin_ms);
  e.end = zero + std::chrono::milliseconds(end_ms);
  e.pack = 0;
  e.lane = lane;
  return e;
}

constexpr auto kLane = core::Lane::kCommunication;

// Step 0: device 0's lane asks for its first pack at 4 ms, inside backward (0 to 10); device 1's
// only after its backward ended. Step 1: device 0 all-reduces one buffer after backward.
std::vector<core::RunEvent> two_steps() {
  using core::Phase;
  return {
      event(0, Phase::kBackward, 0, 0, 10),         event(0, Phase::kWait, 0, 4, 6, kLane),
      event(0, Phase::kAllReduce, 0, 6, 16, kLane), event(1, Phase::kBackward, 0, 0, 10),
      event(1, Phase::kWait, 0, 12, 13, kLane),     event(1, Phase::kAllReduce, 0, 13, 15, kLane),
      event(0, Phase::kBackward, 1, 20, 30),        event(0, Phase::kWait, 1, 30, 31),
      event(0, Phase::kAllReduce, 1, 31, 35),       event(0, Phase::kEvaluate, 2, 40, 41),
  };
}

TEST(RunEvents, AStepsFirstPackCountsWhenAskedForBeforeItsBackwardEnded) {
  const core::PacksDuringBackward all = core::packs_during_backward(two_steps());
  EXPECT_EQ(all.pairs, 3) << "(step, device) pairs with a backward; evaluation has none";
  EXPECT_EQ(all.early, 1) << "device 0's first pack, asked for at 4 ms of a backward to 10 ms";
  const core::PacksDuringBackward later = core::packs_during_backward(two_steps(), 1);
  EXPECT_EQ(later.pairs, 1);
  EXPECT_EQ(later.early, 0) << "one buffer, all-reduced after backward";
}

// The same events priced by time: device 0's all-reduce of step 0 (6 to 16 ms) spends 4 ms within
// its backward (to 10 ms); the others none.
TEST(RunEvents, TheHiddenShareIsTheAllReducesTimeWithinTheSameDevicesBackward) {
  const core::HiddenAllReduce all = core::hidden_all_reduce(two_steps());
  EXPECT_NEAR(all.all_reduce, 0.010 + 0.002 + 0.004, 1e-12);
  EXPECT_NEAR(all.hidden, 0.004, 1e-12);
  const core::HiddenAllReduce later = core::hidden_all_reduce(two_steps(), 1);
  EXPECT_NEAR(later.all_reduce, 0.004, 1e-12);
  EXPECT_EQ(later.hidden, 0.0);
}

}  // namespace
}  // namespace mirrorlab
