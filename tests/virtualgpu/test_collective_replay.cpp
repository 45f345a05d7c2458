// replay_contributions: replaying the recorded transfers must say exactly what every buffer
// holds after every step, checked against the buffers of a real all-reduce at each step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/collective_replay.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::vgpu {
namespace {

// Rank r's values are 2^r: a sum of ranks' values names exactly which ranks are in it.
float value_of(std::uint64_t contributors) {
  float v = 0;
  for (int r = 0; r < 64; ++r) {
    if (contributors >> r & 1) v += std::ldexp(1.0f, r);
  }
  return v;
}

// At every step (all ranks parked), compares the replay of the steps so far with the buffers.
class CheckingObserver : public StepObserver {
 public:
  CheckingObserver(std::vector<std::vector<float>>& buffers) : buffers_(buffers) {}
  void on_step(const CollectiveStep& step) override {
    steps.push_back(step);
    const int n = static_cast<int>(buffers_.size());
    const auto replay = replay_contributions(n, buffers_[0].size(), steps);
    for (int r = 0; r < n; ++r) {
      std::size_t covered = 0;
      for (const ChunkContributors& c : replay[static_cast<std::size_t>(r)]) {
        EXPECT_EQ(c.begin, covered);
        covered = c.end;
        for (std::size_t i = c.begin; i < c.end; ++i) {
          ASSERT_EQ(buffers_[static_cast<std::size_t>(r)][i], value_of(c.contributors))
              << step.algorithm << " step " << step.index << " rank " << r << " element " << i;
        }
      }
      EXPECT_EQ(covered, buffers_[0].size());
    }
  }
  std::vector<CollectiveStep> steps;

 private:
  std::vector<std::vector<float>>& buffers_;
};

TEST(ReplayContributions, MatchesTheBuffersAfterEveryStepOfEveryAlgorithm) {
  for (const char* name : {"ring", "reduce-to-one"}) {
    for (int n : {2, 3, 5}) {
      for (std::size_t count : {7u, 100u}) {
        DeviceRegistry registry;
        registry.set_logical_device_configuration(n, 16);
        std::vector<std::vector<float>> buffers;
        for (int r = 0; r < n; ++r) buffers.emplace_back(count, std::ldexp(1.0f, r));
        std::vector<std::span<float>> spans(buffers.begin(), buffers.end());
        CheckingObserver observer(buffers);
        const auto algorithm = make_all_reduce(name, 0);
        all_reduce(registry.logical_devices(), spans, *algorithm, ReduceOp::kSum, &observer);
        ASSERT_EQ(observer.steps.size(), static_cast<std::size_t>(algorithm->num_steps(n)));
        const auto done = replay_contributions(n, count, observer.steps);
        for (const auto& rank : done) {
          for (const auto& c : rank) EXPECT_EQ(c.contributors, (1ull << n) - 1) << name << " " << n;
        }
      }
    }
  }
}

TEST(ReplayContributions, RingReduceScatterLeavesOneFullChunkPerRank) {
  std::vector<CollectiveStep> steps;
  DeviceRegistry registry;
  registry.set_logical_device_configuration(4, 16);
  std::vector<std::vector<float>> buffers;
  for (int r = 0; r < 4; ++r) buffers.emplace_back(40, std::ldexp(1.0f, r));
  std::vector<std::span<float>> spans(buffers.begin(), buffers.end());
  CheckingObserver observer(buffers);
  all_reduce(registry.logical_devices(), spans, *make_all_reduce("ring"), ReduceOp::kSum,
             &observer);
  const auto halfway = replay_contributions(4, 40, std::span(observer.steps).first(3));
  for (const auto& rank : halfway) {
    int full = 0;
    for (const auto& c : rank) full += c.contributors == 0xF;
    EXPECT_EQ(full, 1);
  }
  const auto nothing_yet = replay_contributions(4, 40, {});
  ASSERT_EQ(nothing_yet[2].size(), 1u);
  EXPECT_EQ(nothing_yet[2][0].contributors, 0x4u);
}

TEST(ReplayContributions, AnOpaqueStepReducesEverything) {
  CollectiveStep nccl;
  nccl.algorithm = "nccl";
  const auto after = replay_contributions(3, 10, std::span(&nccl, 1));
  for (const auto& rank : after) {
    ASSERT_EQ(rank.size(), 1u);
    EXPECT_EQ(rank[0].contributors, 0x7u);
  }
  EXPECT_THROW(replay_contributions(0, 10, {}), std::invalid_argument);
}

// Worker 0 of two, two devices each: after its ring within (both devices hold replicas 0 and 1),
// the step across workers brings replicas 2 and 3 into its first device only; the copy back
// then gives them to the second.
TEST(ReplayContributions, TheStepAcrossWorkersBringsTheOtherWorkersReplicasToTheFirstDevice) {
  std::vector<CollectiveStep> steps(3);
  steps[0].transfers = {Transfer{0, 1, 0, 10, 40, TransferKind::kReduce},
                        Transfer{1, 0, 0, 10, 40, TransferKind::kReduce}};
  steps[1].phase = "across workers";
  steps[2].transfers = {Transfer{0, 1, 0, 10, 40, TransferKind::kCopy}};
  const auto within = replay_contributions(2, 10, std::span(steps.data(), 1), 4, "across workers");
  EXPECT_EQ(within[0][0].contributors, 0x3u);
  EXPECT_EQ(within[1][0].contributors, 0x3u);
  const auto across = replay_contributions(2, 10, std::span(steps.data(), 2), 4, "across workers");
  EXPECT_EQ(across[0][0].contributors, 0xFu);
  EXPECT_EQ(across[1][0].contributors, 0x3u);
  const auto back = replay_contributions(2, 10, std::span(steps.data(), 3), 4, "across workers");
  EXPECT_EQ(back[1][0].contributors, 0xFu);
  // Without the phase named, the same opaque step is an all-reduce of these ranks alone.
  const auto opaque = replay_contributions(2, 10, std::span(steps.data(), 2));
  EXPECT_EQ(opaque[0][0].contributors, 0x3u);
  EXPECT_THROW(replay_contributions(2, 10, {}, 65, "across workers"), std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab::vgpu
