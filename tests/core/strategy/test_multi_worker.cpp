// Multi-worker mirrored training (MirroredStrategy with a WorkerGroup over MPI), run by ctest as
// 2 MPI ranks (mpirun --oversubscribe -np 2): each rank a worker with its own CPU virtual GPUs.
// What must hold (issue 17): 2 workers x 2 devices compute what 1 device computes on the same
// global batches (within 1e-5 after 30 steps, both models) and what 1 worker x 4 devices does;
// two runs are bit-identical; each worker takes exactly the examples the one-process run gives
// its replicas; worker 0's variables are everyone's; workers that differ are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/io/synthetic_dataset.h"
#include "core/nn/fingerprint.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/training_reference.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/mpi/mpi_worker_group.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;

// A test must never hang: a rank that lost its peer says so and ends the run.
vgpu::WorkerWatch::Lost end_the_test() {
  return [](const vgpu::WorkerLoss& loss) {
    std::fprintf(stderr, "test_multi_worker: %s\n", loss.sentence.c_str());
    std::fflush(nullptr);
    _exit(3);
  };
}

struct Workers {
  vgpu::MpiWorkerGroup group{60s, end_the_test()};
  ~Workers() { group.finish(); }
};

core::StrategyOptions options_for(core::ModelKind model) {
  core::StrategyOptions o;
  o.model = model;
  o.optimizer.kind = core::OptimizerKind::kSgd;
  o.optimizer.learning_rate = 0.05f;
  o.seed = 11;
  // Every example weighs the same, as on one device (the uneven batches would otherwise differ:
  // see test_mirrored_strategy's LossScaling).
  o.loss_scaling = core::LossScaling::kBatchMean;
  return o;
}

// 82 examples in global batches of 24: every 4th step has an uneven batch of 10, which 4
// replicas of 6 split 3, 3, 3, 1 as TensorFlow does (worker 0 takes 3 + 3, worker 1 3 + 1).
constexpr std::size_t kExamples = 82, kGlobal = 24;
constexpr int kSteps = 30;

// fit() for `steps` steps on `devices` CPU virtual GPUs, as one worker of `workers` (or alone).
std::vector<float> train(const core::StrategyOptions& o, int devices, vgpu::WorkerGroup* workers,
                         int steps = kSteps) {
  return testing_reference::mirrored_training(core::synthetic_dataset(kExamples), o, devices,
                                              workers, kGlobal, steps, 5);
}

class TwoWorkers : public ::testing::TestWithParam<core::ModelKind> {};

TEST_P(TwoWorkers, TwoByTwoMatchOneDeviceAndOneWorkerOfFourAfter30Steps) {
  Workers workers;
  ASSERT_EQ(workers.group.size(), 2) << "run under mpirun -np 2";
  const core::StrategyOptions o = options_for(GetParam());
  const std::vector<float> two_by_two = train(o, 2, &workers.group);
  // Each rank computes the references itself: no collectives in them.
  const core::Dataset data = core::synthetic_dataset(kExamples);
  const std::vector<float> one_device =
      testing_reference::plain_single_device_training(data, o, kGlobal, kSteps, 5);
  testing_reference::expect_close_weights(two_by_two, one_device, 1e-5,
                                          "2 workers x 2 devices against 1 device");
  const std::vector<float> one_by_four = train(o, 4, nullptr);
  testing_reference::expect_close_weights(two_by_two, one_by_four, 1e-5,
                                          "2 workers x 2 devices against 1 worker x 4 devices");
}

TEST_P(TwoWorkers, TwoRunsAreBitIdenticalAndBothWorkersHoldTheSameWeights) {
  Workers workers;
  const core::StrategyOptions o = options_for(GetParam());
  const std::vector<float> first = train(o, 2, &workers.group, 12);
  const std::vector<float> second = train(o, 2, &workers.group, 12);
  ASSERT_EQ(first.size(), second.size());
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);
  const std::vector<std::string> prints =
      workers.group.all_gather(std::to_string(core::fingerprint(first)));
  EXPECT_EQ(prints[0], prints[1]) << "the workers' weights differ";
}

INSTANTIATE_TEST_SUITE_P(BothModels, TwoWorkers,
                         ::testing::Values(core::ModelKind::kMlp, core::ModelKind::kCnn),
                         [](const auto& info) { return std::string(core::to_string(info.param)); });

// Records what each replica of this worker took of each global batch.
class ShardRecorder : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    for (const core::Shard& s : *start.shards) {
      const auto examples = start.batch->indices.subspan(s.begin, s.count);
      taken.emplace_back(examples.begin(), examples.end());
    }
    return {};
  }
  std::vector<std::vector<std::uint32_t>> taken;  // per step, per replica of this worker
};

TEST(MultiWorker, EachWorkerTakesTheExamplesTheOneProcessRunGivesItsReplicas) {
  Workers workers;
  const int rank = workers.group.rank();
  const core::Dataset data = core::synthetic_dataset(kExamples);
  std::vector<std::uint32_t> order(data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 128);
  core::MirroredStrategy strategy(registry.logical_devices(), options_for(core::ModelKind::kMlp),
                                  nullptr, &workers.group);
  EXPECT_EQ(strategy.num_replicas_in_sync(), 4);
  EXPECT_EQ(strategy.first_replica_id(), 2 * rank);
  ShardRecorder recorder;
  strategy.add_listener(&recorder);
  // A full batch of 24 and an uneven one of 10, 6 per replica.
  for (const std::size_t count : {std::size_t{24}, std::size_t{10}}) {
    strategy.train_step(core::GlobalBatch{&data, std::span(order).subspan(0, count), 6});
  }
  ASSERT_EQ(recorder.taken.size(), 4u);
  for (std::size_t step = 0; step < 2; ++step) {
    const std::size_t count = step == 0 ? 24 : 10;
    const auto one_process = core::split_global_batch(count, 4, 6);
    for (int r = 0; r < 2; ++r) {
      const core::Shard& expected = one_process[static_cast<std::size_t>(2 * rank + r)];
      const std::vector<std::uint32_t>& got =
          recorder.taken[step * 2 + static_cast<std::size_t>(r)];
      ASSERT_EQ(got.size(), expected.count) << "step " << step << " replica " << 2 * rank + r;
      if (!got.empty()) {
        EXPECT_EQ(got.front(), expected.begin);
      }
    }
  }
  strategy.remove_listener(&recorder);
}

TEST(MultiWorker, EveryWorkerStartsFromWorker0sVariables) {
  Workers workers;
  core::StrategyOptions o = options_for(core::ModelKind::kMlp);
  o.seed = 100 + static_cast<std::uint64_t>(workers.group.rank());  // would differ on their own
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 128);
  core::EventStore events;
  core::MirroredStrategy strategy(registry.logical_devices(), o, &events, &workers.group);
  const auto params = strategy.replica(0).model().params();
  const std::vector<std::string> prints =
      workers.group.all_gather(std::to_string(core::fingerprint(params)));
  EXPECT_EQ(prints[0], prints[1]);
  std::size_t broadcasts = 0;
  for (const core::RunEvent& e : events.snapshot())
    broadcasts += e.phase == core::Phase::kBroadcastInit;
  EXPECT_EQ(broadcasts, workers.group.rank() == 0 ? 0u : 1u) << "worker 1 receives, worker 0 sends";
}

TEST(MultiWorker, WorkersWithDifferentDeviceCountsAreRefusedOnEveryWorker) {
  Workers workers;
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1 + workers.group.rank(), 128);
  try {
    core::MirroredStrategy strategy(registry.logical_devices(), options_for(core::ModelKind::kMlp),
                                    nullptr, &workers.group);
    ADD_FAILURE() << "worker " << workers.group.rank() << " accepted different device counts";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("worker 1 has 2"), std::string::npos) << e.what();
  }
}

TEST(MultiWorker, TheHierarchicalAllReduceSumsAndAveragesEveryDeviceOfEveryWorker) {
  Workers workers;
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 64);
  const std::vector<vgpu::Device*>& devices = registry.logical_devices();
  for (const std::string algorithm : {"ring", "reduce-to-one", "one-shot"}) {
    const vgpu::HierarchicalAllReduce all_reduce(vgpu::make_all_reduce(algorithm), workers.group);
    for (const vgpu::ReduceOp op : {vgpu::ReduceOp::kSum, vgpu::ReduceOp::kMean}) {
      // Device d of worker w holds 1 + 2w + d in every element (1, 2 on worker 0; 3, 4 on 1):
      // 10 in all, 2.5 on average, exact in floats.
      const std::size_t count = 1001;  // not a multiple of the ranks
      std::vector<vgpu::Allocation> blocks;
      std::vector<std::span<float>> buffers;
      for (int d = 0; d < 2; ++d) {
        blocks.push_back(
            devices[static_cast<std::size_t>(d)]->memory().allocate(count * sizeof(float), "test"));
        buffers.emplace_back(blocks.back().as<float>(), count);
        std::fill(buffers.back().begin(), buffers.back().end(),
                  static_cast<float>(1 + 2 * workers.group.rank() + d));
      }
      vgpu::all_reduce(devices, buffers, all_reduce, op);
      const float expected = op == vgpu::ReduceOp::kSum ? 10.0f : 2.5f;
      for (const std::span<float>& b : buffers) {
        EXPECT_EQ(b.front(), expected) << algorithm;
        EXPECT_EQ(b.back(), expected) << algorithm;
      }
    }
  }
}

// Every step of the hierarchical all-reduce, in order, as a listener sees them.
class StepNames : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart&) override { return {true, false, false}; }
  void on_collective_step(const vgpu::CollectiveStep& step) override {
    phases.push_back(step.phase);
  }
  std::vector<std::string> phases;
};

TEST(MultiWorker, TheObserverSeesWithinThenAcrossWorkersThenBack) {
  Workers workers;
  core::StrategyOptions o = options_for(core::ModelKind::kMlp);
  o.all_reduce = "ring";
  const core::Dataset data = core::synthetic_dataset(kExamples);
  std::vector<std::uint32_t> order(24);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 128);
  core::MirroredStrategy strategy(registry.logical_devices(), o, nullptr, &workers.group);
  StepNames names;
  strategy.add_listener(&names);
  strategy.train_step(core::GlobalBatch{&data, std::span(order), 6});
  strategy.remove_listener(&names);
  const std::vector<std::string> expected = {"reduce-scatter", "all-gather",
                                             std::string(vgpu::kAcrossWorkersPhase),
                                             std::string(vgpu::kBackToDevicesPhase)};
  EXPECT_EQ(names.phases, expected);
}

}  // namespace
}  // namespace mirrorlab
