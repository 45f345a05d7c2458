// Gradient packs (core/strategy/gradient_packs.h): packed as TensorFlow 2.21 packs (its numbers,
// found by running it: docs/tensorflow-packs.md), and the same weights bit for bit whatever the
// packs, on every algorithm that runs here, 1 to 8 devices, uneven batches and several workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/faults.h"
#include "core/strategy/gradient_packs.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/hang_guard.h"
#include "tests/support/training_reference.h"
#include "tests/support/worker_threads.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/workers/thread_worker_group.h"

namespace mirrorlab {
namespace {

// The MLP's weight tensors, as the model lays them out (784-256-128-10).
std::vector<core::WeightTensor> mlp_tensors() {
  vgpu::MemoryArena arena("/packs", 64 * vgpu::kMiB);
  return core::Model::create(core::ModelKind::kMlp, arena)->weight_tensors();
}

std::vector<std::size_t> pack_bytes(const std::vector<core::GradientPack>& packs) {
  std::vector<std::size_t> bytes;
  for (const auto& p : packs) bytes.push_back(p.bytes());
  return bytes;
}

core::PackOptions by_bytes(std::size_t bytes) { return core::PackOptions{bytes, 0, true}; }
core::PackOptions by_count(int count) { return core::PackOptions{0, count, true}; }

// TensorFlow 2.21's group_by_size on this MLP (q1.py's spy lines): the tensors backwards are 40,
// 5120, 512, 131072, 1024 and 802816 bytes, and a pack closes once it holds more than the limit.
TEST(GradientPacks, ByBytesAsTensorFlowsCollectiveAllReducePacksThem) {
  const auto tensors = mlp_tensors();
  using Bytes = std::vector<std::size_t>;
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(0))), Bytes{940584});
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(4096))),
            (Bytes{5160, 131584, 803840}));
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(100000))),
            (Bytes{136744, 803840}));
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(5160))),
            (Bytes{5672, 131072, 803840}));
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(5159))),
            (Bytes{5160, 131584, 803840}));
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_bytes(40))),
            (Bytes{5160, 512, 131072, 1024, 802816}));
  EXPECT_EQ(core::make_gradient_packs(tensors, by_bytes(1)).size(), 6u);
  // Pack 0 is the last layer, the first backward finishes, and the packs tile the buffer.
  const auto packs = core::make_gradient_packs(tensors, by_bytes(4096));
  EXPECT_EQ(packs[0].tensors, (std::vector<std::string>{"dense_2/bias", "dense_2/kernel"}));
  EXPECT_EQ(packs[0].end, tensors.back().offset + tensors.back().size);
  for (std::size_t i = 1; i < packs.size(); ++i) EXPECT_EQ(packs[i].end, packs[i - 1].begin);
  EXPECT_EQ(packs.back().begin, 0u);
}

// NcclAllReduce(num_packs) as TensorFlow 2.21 cut it before failing on CPU devices: the forward
// concatenation in equal parts, the remainder in the last (470292 x 2; 235144 x 3 + 235152).
TEST(GradientPacks, ByCountAsTensorFlowsNcclAllReduceCutsThem) {
  const auto tensors = mlp_tensors();
  using Bytes = std::vector<std::size_t>;
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_count(2))), (Bytes{470292, 470292}));
  // All-reduced last part first: the remainder's part leads.
  EXPECT_EQ(pack_bytes(core::make_gradient_packs(tensors, by_count(4))),
            (Bytes{235152, 235144, 235144, 235144}));
  EXPECT_EQ(core::make_gradient_packs(tensors, by_count(1)).size(), 1u);
  const auto three = core::make_gradient_packs(tensors, by_count(3));
  EXPECT_EQ(three[2].tensors, std::vector<std::string>{"dense/kernel (part)"});
}

TEST(GradientPacks, ConflictingOrImpossibleOptionsSayWhatToGive) {
  const auto tensors = mlp_tensors();
  try {
    core::make_gradient_packs(tensors, core::PackOptions{4096, 2, true});
    FAIL() << "both options were taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("give one of them"), std::string::npos) << e.what();
  }
  try {
    core::make_gradient_packs(tensors, by_count(300000));
    FAIL() << "more packs than gradients were taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("give at most that many"), std::string::npos) << e.what();
  }
  EXPECT_THROW(core::make_gradient_packs(tensors, by_count(-1)), std::invalid_argument);
}

// The MLP's packs: the last layer's written almost at once (its backward is a sliver), the first
// layer's, most of the bytes, only as backward ends.
TEST(GradientPacks, TheMlpsPacksAreWrittenAsItsLayersFinish) {
  core::PackOptions o;
  o.bytes_per_pack = 4096;
  const auto work =
      core::pack_work(core::ModelKind::kMlp, core::gradient_packs_of(core::ModelKind::kMlp, o));
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0].bytes, 5160);
  EXPECT_LT(work[0].ready, 0.05);
  EXPECT_GT(work[1].ready, work[0].ready);
  EXPECT_LT(work[1].ready, 0.5);
  EXPECT_DOUBLE_EQ(work[2].ready, 1.0);
}

// ---- the same weights, bit for bit ----------------------------------------------------------

struct SameBitsCase {
  const char* algorithm;
  int devices;
};

void PrintTo(const SameBitsCase& c, std::ostream* os) {
  *os << c.algorithm << ", " << c.devices << " devices";
}

class PacksKeepTheBits : public ::testing::TestWithParam<SameBitsCase> {};

// 7 steps of the MLP, 4 examples a replica, on 41 examples: on 3 to 8 devices the step that
// reaches the data's end is an uneven batch. Momentum keeps the update's order visible too.
std::vector<float> train(const SameBitsCase& c, const core::PackOptions& packs,
                         vgpu::WorkerGroup* workers = nullptr) {
  core::StrategyOptions o =
      testing_reference::options_for(core::ModelKind::kMlp, core::OptimizerKind::kSgd, 0.05f);
  o.optimizer.momentum = 0.9f;
  o.all_reduce = c.algorithm;
  o.packs = packs;
  const int workers_count = workers != nullptr ? workers->size() : 1;
  return testing_reference::mirrored_training(
      core::synthetic_dataset(41), o, c.devices, workers,
      4 * static_cast<std::size_t>(c.devices) * static_cast<std::size_t>(workers_count), 7, 3);
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0 ? 1 : 0;
  }
  EXPECT_EQ(differing, 0u) << what << ": weights that differ from one pack's";
}

TEST_P(PacksKeepTheBits, AnyPacksGiveTheOnePackWeights) {
  const SameBitsCase c = GetParam();
  const std::vector<float> one_pack = train(c, {});
  core::PackOptions after_backward = by_bytes(4096);
  after_backward.overlap = false;
  for (const core::PackOptions& packs :
       {by_bytes(4096), by_bytes(1), by_bytes(300000), by_count(3), by_count(7), after_backward}) {
    expect_same_bits(train(c, packs), one_pack,
                     "bytes_per_pack " + std::to_string(packs.bytes_per_pack) + ", num_packs " +
                         std::to_string(packs.num_packs) +
                         (packs.overlap ? ", overlapping backward" : ", after backward"));
  }
}

std::vector<SameBitsCase> every_algorithm_and_count() {
  std::vector<SameBitsCase> cases;
  for (const char* algorithm : {"ring", "reduce-to-one", "one-shot"}) {
    for (int devices : {1, 2, 3, 5, 8}) cases.push_back({algorithm, devices});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, PacksKeepTheBits,
                         ::testing::ValuesIn(every_algorithm_and_count()),
                         [](const ::testing::TestParamInfo<SameBitsCase>& info) {
                           std::string name = info.param.algorithm;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name + "_" + std::to_string(info.param.devices) + "devices";
                         });

// The MLP on 3 devices, its gradients in TensorFlow's 3 packs at 4096 bytes, by the ring.
core::MirroredStrategy ring_in_three_packs(vgpu::DeviceRegistry& registry) {
  registry.set_logical_device_configuration(3, 128);
  core::StrategyOptions o =
      testing_reference::options_for(core::ModelKind::kMlp, core::OptimizerKind::kSgd, 0.01f);
  o.all_reduce = "ring";
  o.packs = by_bytes(4096);
  return core::MirroredStrategy(registry.logical_devices(), o);
}

// The ring keeps the whole buffer's chunks: a pack's steps move the part of each chunk in it,
// and the observer sees every pack's steps, numbered on, over the whole buffer's elements.
TEST(GradientPacks, TheObserverSeesEveryPacksStepsOverTheWholeBuffer) {
  struct Steps : core::StepListener {
    std::vector<vgpu::CollectiveStep> seen;
    int announced = 0;
    core::StepNeeds begin_step(const core::StepStart& start) override {
      announced = start.all_reduce_steps;
      core::StepNeeds needs;
      needs.boundaries = true;
      return needs;
    }
    void on_collective_step(const vgpu::CollectiveStep& step) override { seen.push_back(step); }
  } steps;
  const core::Dataset data = core::synthetic_dataset(12);
  vgpu::DeviceRegistry registry;
  core::MirroredStrategy strategy = ring_in_three_packs(registry);
  ASSERT_EQ(strategy.packs().size(), 3u);
  EXPECT_EQ(strategy.all_reduce_steps(), 12);
  EXPECT_NE(strategy.tensorflow_all_reduce_log().find("num_packs = 3"), std::string::npos)
      << strategy.tensorflow_all_reduce_log();
  strategy.add_listener(&steps);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  strategy.train_step(core::GlobalBatch{&data, std::span(order), 4});
  EXPECT_EQ(steps.announced, 12);
  ASSERT_EQ(steps.seen.size(), 12u);  // 3 packs x 2(N-1)
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < steps.seen.size(); ++i) {
    EXPECT_EQ(steps.seen[i].index, static_cast<int>(i));
    EXPECT_EQ(steps.seen[i].pack, static_cast<int>(i) / 4);
    EXPECT_EQ(steps.seen[i].packs, 3);
    for (const auto& t : steps.seen[i].transfers) {
      const core::GradientPack& pack = strategy.packs()[static_cast<std::size_t>(i / 4)];
      EXPECT_GE(t.begin, pack.begin);
      EXPECT_LE(t.end, pack.end);
      if (i % 4 == 0) bytes += t.bytes;  // each pack's first reduce-scatter step
    }
  }
  // In a ring's first step every rank moves one chunk: all of the buffer. Over the packs' first
  // steps, all of it again, each element once, in the chunk it has in the whole buffer.
  EXPECT_EQ(bytes, strategy.replica(0).model().num_params() * sizeof(float));
}

TEST(GradientPacks, TwoWorkersInPacksGiveTheOnePackWeights) {
  testing::within_seconds(120, "2 workers in packs", [] {
    const SameBitsCase c{"ring", 2};
    std::vector<std::vector<float>> one(2), packed(2);
    for (auto [packs, out] :
         {std::pair{core::PackOptions{}, &one}, std::pair{by_bytes(4096), &packed}}) {
      vgpu::ThreadWorkers group(2);
      const auto errors = testing::on_every_worker(group.size(), [&](int w) {
        (*out)[static_cast<std::size_t>(w)] = train(c, packs, &group.worker(w));
      });
      ASSERT_EQ(errors, std::vector<std::string>(2));
    }
    expect_same_bits(packed[0], one[0], "worker 0, bytes_per_pack 4096");
    expect_same_bits(packed[1], one[0], "worker 1, bytes_per_pack 4096");
  });
}

// A device that fails in the all-reduce's 6th step fails in the second pack's, and the steps are
// counted over every pack.
TEST(GradientPacks, ADeviceFailingInAPacksAllReduceIsNamedWithItsStep) {
  const core::Dataset data = core::synthetic_dataset(12);
  vgpu::DeviceRegistry registry;
  core::MirroredStrategy strategy = ring_in_three_packs(registry);
  core::FaultPlan plan;
  core::DeviceFailure failure;
  failure.device = 1;
  failure.step = 1;
  failure.phase = core::FailurePhase::kAllReduce;
  failure.all_reduce_step = 5;
  plan.failures.push_back(failure);
  core::FaultInjector faults;
  faults.attach(strategy, plan);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  try {
    strategy.train_step(core::GlobalBatch{&data, std::span(order), 4});
    FAIL() << "the device did not fail";
  } catch (const core::DeviceFailed& e) {
    EXPECT_NE(std::string(e.what()).find("its step 6 of 12"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirrorlab
