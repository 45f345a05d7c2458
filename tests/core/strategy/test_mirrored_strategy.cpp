// MirroredStrategy: N replicas must compute exactly what one device computes on the same global
// batch, stay bit-identical, fail loudly and cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/nn/fingerprint.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "core/strategy/plain_trainer.h"
#include "tests/support/training_reference.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

using core::ModelKind;
using core::OptimizerKind;

using testing_reference::options_for;
using testing_reference::plain_single_device_training;

struct EquivalenceCase {
  ModelKind model;
  OptimizerKind optimizer;
  int replicas;
};

void PrintTo(const EquivalenceCase& c, std::ostream* os) {
  *os << core::to_string(c.model) << ", " << core::to_string(c.optimizer) << ", " << c.replicas
      << " replicas";
}

class MirroredEquivalence : public ::testing::TestWithParam<EquivalenceCase> {};

// 82 examples in global batches of 24: every 4th step has an uneven batch of 10, which on 8
// replicas of 3 is split 2,2,2,2,2,0,0,0 (TensorFlow's way: the last replicas get nothing).
TEST_P(MirroredEquivalence, MatchesPlainSingleDeviceTrainingAfter30Steps) {
  const EquivalenceCase c = GetParam();
  const core::Dataset data = core::synthetic_dataset(82);
  const std::size_t global = 24;
  const int steps = 30;
  const float lr = c.optimizer == OptimizerKind::kSgd ? 0.05f : 1e-3f;
  core::StrategyOptions o = options_for(c.model, c.optimizer, lr);
  // Every example weighs the same, as on one device. Keras' way (replica-mean) weighs the
  // replicas' means alike, which on the uneven batches is not what one device computes: see
  // LossScaling below.
  o.loss_scaling = core::LossScaling::kBatchMean;
  const std::vector<float> reference = plain_single_device_training(data, o, global, steps, 5);

  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(c.replicas, 256);
  core::MirroredStrategy strategy(registry.logical_devices(), o);
  core::FitOptions fit;
  fit.epochs = 100;
  fit.max_steps = steps;
  fit.batch_per_replica = global / static_cast<std::size_t>(c.replicas);
  fit.seed = 5;
  const core::History history = core::fit(strategy, data, nullptr, fit);
  ASSERT_EQ(history.steps, steps);

  // Adam divides each step by the root of its second moment, so rounding that SGD leaves at a few
  // 1e-6 grows: the CNN on 3 replicas came to 1.05e-5 on an AMD EPYC with AVX-512 (OpenBLAS
  // sums the products there in another order than on the machines 1e-5 was set on). A broken
  // all-reduce or split is off by far more than either.
  const double tolerance = c.optimizer == OptimizerKind::kAdam ? 3e-5 : 1e-5;
  for (int r = 0; r < c.replicas; ++r) {
    testing_reference::expect_close_weights(strategy.replica(r).model().params(), reference,
                                            tolerance, "replica " + std::to_string(r));
  }
}

std::string case_name(const ::testing::TestParamInfo<EquivalenceCase>& info) {
  return std::string(core::to_string(info.param.model)) + "_" +
         core::to_string(info.param.optimizer) + "_" + std::to_string(info.param.replicas) +
         "replicas";
}

// Under ThreadSanitizer a CNN case takes over 3 minutes (the reference GEMM, instrumented; 5 of
// them were most of the TSan job's time). The threads of a CNN step are the MLP's (the strategy
// does not know the model), so the TSan build runs the MLP cases, the other builds all of them.
std::vector<EquivalenceCase> equivalence_cases() {
#if defined(__SANITIZE_THREAD__)
  constexpr bool kWithCnn = false;
#else
  constexpr bool kWithCnn = true;
#endif
  std::vector<EquivalenceCase> cases;
  for (const EquivalenceCase& c : {EquivalenceCase{ModelKind::kCnn, OptimizerKind::kSgd, 1},
                                   EquivalenceCase{ModelKind::kCnn, OptimizerKind::kSgd, 2},
                                   EquivalenceCase{ModelKind::kCnn, OptimizerKind::kSgd, 3},
                                   EquivalenceCase{ModelKind::kCnn, OptimizerKind::kSgd, 4},
                                   EquivalenceCase{ModelKind::kCnn, OptimizerKind::kSgd, 8},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kSgd, 1},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kSgd, 2},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kSgd, 3},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kSgd, 4},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kSgd, 8},
                                   EquivalenceCase{ModelKind::kMlp, OptimizerKind::kAdam, 4},
                                   EquivalenceCase{ModelKind::kCnn, OptimizerKind::kAdam, 3}}) {
    if (kWithCnn || c.model != ModelKind::kCnn) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllReplicaCounts, MirroredEquivalence,
                         ::testing::ValuesIn(equivalence_cases()), case_name);

std::vector<float> train_twice_params(std::uint64_t seed, int replicas, double* loss,
                                      const std::string& all_reduce = "auto",
                                      ModelKind model = ModelKind::kCnn) {
  const core::Dataset data = core::synthetic_dataset(64);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 256);
  core::StrategyOptions o = options_for(model, OptimizerKind::kAdam, 1e-3f);
  o.seed = seed;
  o.all_reduce = all_reduce;
  core::MirroredStrategy strategy(registry.logical_devices(), o);
  core::FitOptions fit;
  fit.epochs = 2;
  fit.batch_per_replica = 8;
  fit.seed = seed;
  *loss = core::fit(strategy, data, &data, fit).final_train_loss;
  return {strategy.replica(0).model().params().begin(), strategy.replica(0).model().params().end()};
}

TEST(MirroredStrategy, SameSeedGivesABitIdenticalRun) {
  double loss_a = 0, loss_b = 0, loss_c = 0;
  const auto a = train_twice_params(3, 2, &loss_a);
  const auto b = train_twice_params(3, 2, &loss_b);
  const auto c = train_twice_params(4, 2, &loss_c);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(loss_a, loss_b);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);
}

TEST(MirroredStrategy, ReplicasStartEqualAndStayInSync) {
  const core::Dataset data = core::synthetic_dataset(48);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 256);
  core::EventStore events;
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kNadam, 1e-3f),
                                  &events);
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(core::fingerprint(strategy.replica(r).model().params()),
              core::fingerprint(strategy.replica(0).model().params()));
  }
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  const core::GlobalBatch batch{&data, std::span(order).subspan(0, 12), 4};
  strategy.train_step(batch);
  EXPECT_NE(strategy.replica(0).last_fingerprint(), 0u);
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(strategy.replica(r).last_fingerprint(), strategy.replica(0).last_fingerprint());
  }
}

TEST(MirroredStrategy, WeightsThatDivergeStopTheRunWithAClearError) {
  const core::Dataset data = core::synthetic_dataset(16);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 256);
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f));
  strategy.replica(1).model().params()[5] += 1.0f;  // one replica's copy goes astray
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  try {
    strategy.train_step(core::GlobalBatch{&data, std::span(order).subspan(0, 8), 4});
    FAIL() << "diverged replicas were not detected";
  } catch (const core::ReplicasOutOfSync& e) {
    EXPECT_NE(std::string(e.what()).find("/gpu:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("after step 1"), std::string::npos) << e.what();
  }
}

// A NaN that appears in one replica's gradient is caught on that replica before the all-reduce:
// named (step, replica, layer), and no replica's weights take the step, on every algorithm.
TEST(MirroredStrategy, ANanGradientIsNamedWhereItAppearsAndNeverReachesTheWeights) {
  const core::Dataset data = core::synthetic_dataset(24);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  for (const char* algorithm : {"reduce-to-one", "ring", "one-shot"}) {
    for (const int replicas : {2, 3}) {
      SCOPED_TRACE(std::string(algorithm) + " on " + std::to_string(replicas));
      vgpu::DeviceRegistry registry;
      registry.set_logical_device_configuration(replicas, 256);
      core::StrategyOptions options = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f);
      options.all_reduce = algorithm;
      core::MirroredStrategy strategy(registry.logical_devices(), options);
      const core::GlobalBatch batch{&data, std::span(order).subspan(0, 4u * replicas), 4};
      strategy.train_step(batch);  // one good step first
      std::vector<std::uint64_t> before;
      for (int r = 0; r < replicas; ++r) {
        before.push_back(strategy.replica(r).model().params_fingerprint());
      }
      std::size_t dense_1 = 0;
      for (const core::LayerSummary& layer : strategy.replica(0).model().summary()) {
        if (layer.name == "dense_1") dense_1 = layer.offset;
      }
      ASSERT_GT(dense_1, 0u);
      try {
        strategy.run(batch, [&](core::ReplicaContext& ctx) {
          const core::Tensor& logits = ctx.forward();
          core::LossStats stats = ctx.backward(logits);
          if (ctx.replica_id_in_sync_group() == replicas - 1) {
            ctx.model().grads()[dense_1 + 7] = std::numeric_limits<float>::quiet_NaN();
          }
          ctx.apply_gradients();
          return stats;
        });
        FAIL() << "the NaN gradient was not caught";
      } catch (const core::DivergedError& e) {
        EXPECT_EQ(e.where().step, 2);
        EXPECT_EQ(e.where().replica, replicas - 1);
        EXPECT_EQ(e.where().layer, "dense_1");
        EXPECT_TRUE(std::isnan(e.where().value));
        const std::string what = e.what();
        EXPECT_NE(what.find("training diverged in step 2: a gradient of dense_1 on /gpu:" +
                            std::to_string(replicas - 1)),
                  std::string::npos)
            << what;
      }
      for (int r = 0; r < replicas; ++r) {
        EXPECT_EQ(strategy.replica(r).model().params_fingerprint(), before[r])
            << "replica " << r << " took the step";
      }
    }
  }
}

TEST(MirroredStrategy, ANonFiniteLossIsNamedOnItsReplica) {
  const core::Dataset data = core::synthetic_dataset(16);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 256);
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f));
  // An infinite weight of the last layer: replica 1's logits, and so its loss, are not finite.
  const auto& last = strategy.replica(1).model().summary().back();
  strategy.replica(1).model().params()[last.offset] = std::numeric_limits<float>::infinity();
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  try {
    strategy.train_step(core::GlobalBatch{&data, std::span(order).subspan(0, 8), 4});
    FAIL() << "the non-finite loss was not caught";
  } catch (const core::DivergedError& e) {
    EXPECT_TRUE(e.where().in_loss());
    EXPECT_EQ(e.where().replica, 1);
    EXPECT_EQ(e.where().step, 1);
    EXPECT_NE(std::string(e.what()).find("the loss on /gpu:1 (replica 1)"), std::string::npos)
        << e.what();
  }
}

TEST(MirroredStrategy, OutOfMemoryDuringAStepIsAClearErrorAndTheStrategyStaysUsable) {
  const core::Dataset data = core::synthetic_dataset(600);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 8);  // the MLP and Adam fit; 300 images do not
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kAdam, 1e-3f));
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  try {
    strategy.train_step(core::GlobalBatch{&data, std::span(order), 300});
    FAIL() << "expected an out-of-memory error";
  } catch (const vgpu::OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/gpu:"), std::string::npos) << what;
    EXPECT_EQ(e.ran_out(), vgpu::MemoryRanOut::kLimit);  // the advice: tests/app/test_advice.cpp
  }
  // A smaller batch afterwards trains normally, and the replicas are still in sync.
  const core::LossStats stats =
      strategy.train_step(core::GlobalBatch{&data, std::span(order).subspan(0, 16), 8});
  EXPECT_EQ(stats.count, 16);
}

TEST(MirroredStrategy, ModelThatDoesNotFitItsDeviceIsAClearError) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 2);
  try {
    core::MirroredStrategy strategy(registry.logical_devices(),
                                    options_for(ModelKind::kCnn, OptimizerKind::kAdam, 1e-3f));
    FAIL() << "a 694k-parameter CNN cannot fit in 2 MiB";
  } catch (const vgpu::OutOfMemoryError& e) {
    EXPECT_EQ(e.limit(), 2 * vgpu::kMiB);
  }
}

// The custom training loop of the seeds (strategy.run with a per-replica step function) is the
// same computation as fit's step.
TEST(MirroredStrategy, CustomLoopWithStrategyRunMatchesTrainStep) {
  const core::Dataset data = core::synthetic_dataset(40);
  const auto order = core::shuffled_indices(data.size(), 2, 1);
  auto make = [](vgpu::DeviceRegistry& registry) {
    registry.set_logical_device_configuration(2, 256);
    return std::make_unique<core::MirroredStrategy>(
        registry.logical_devices(), options_for(ModelKind::kCnn, OptimizerKind::kAdam, 1e-3f));
  };
  vgpu::DeviceRegistry ra, rb;
  auto a = make(ra);
  auto b = make(rb);
  for (int step = 0; step < 3; ++step) {
    const core::GlobalBatch batch{&data, std::span(order).subspan(step * 10, 10), 5};
    const core::LossStats fit_stats = a->train_step(batch);
    const std::vector<core::LossStats> per_replica = b->run(batch, [](core::ReplicaContext& ctx) {
      EXPECT_EQ(ctx.num_replicas_in_sync(), 2);
      EXPECT_EQ(ctx.global_batch_size(), 10u);
      const core::Tensor& logits = ctx.forward();
      core::LossStats stats = ctx.backward(logits);
      ctx.apply_gradients();
      return stats;
    });
    ASSERT_EQ(per_replica.size(), 2u);
    EXPECT_EQ(core::reduce_sum(per_replica).loss_sum, fit_stats.loss_sum);
  }
  EXPECT_EQ(core::fingerprint(a->replica(1).model().params()),
            core::fingerprint(b->replica(1).model().params()));
}

TEST(MirroredStrategy, AllReduceSumInAStepFunctionSumsAcrossReplicas) {
  const core::Dataset data = core::synthetic_dataset(8);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(4, 64);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f);
  o.all_reduce = "ring";
  core::MirroredStrategy strategy(registry.logical_devices(), o);
  std::vector<std::vector<float>> values(4, std::vector<float>(5));
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  strategy.run(core::GlobalBatch{&data, std::span(order), 2}, [&](core::ReplicaContext& ctx) {
    auto& mine = values[static_cast<std::size_t>(ctx.replica_id_in_sync_group())];
    for (std::size_t i = 0; i < mine.size(); ++i) {
      mine[i] = static_cast<float>((ctx.replica_id_in_sync_group() + 1) * (i + 1));
    }
    ctx.all_reduce_sum(mine);
    return core::LossStats{};
  });
  for (const auto& v : values) {
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], 10.0f * (i + 1));
  }
}

TEST(MirroredStrategy, ReplicasMakingDifferentCollectiveCallsIsAnErrorNotAHang) {
  const core::Dataset data = core::synthetic_dataset(8);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 64);
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f));
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  std::vector<float> buffer(3, 1.0f), other(3, 1.0f);
  try {
    strategy.run(core::GlobalBatch{&data, std::span(order), 4}, [&](core::ReplicaContext& ctx) {
      if (ctx.replica_id_in_sync_group() == 0) ctx.all_reduce_sum(buffer);
      return core::LossStats{};
    });
    FAIL() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("replica 1 finished its step function"), std::string::npos)
        << e.what();
  }
  // The strategy is usable afterwards.
  strategy.run(core::GlobalBatch{&data, std::span(order), 4}, [&](core::ReplicaContext& ctx) {
    ctx.all_reduce_sum(ctx.replica_id_in_sync_group() == 0 ? std::span(buffer) : std::span(other));
    return core::LossStats{};
  });
  EXPECT_EQ(buffer[0], 2.0f);
}

TEST(MirroredStrategy, EveryPhaseOfEveryStepOnEveryDeviceIsRecorded) {
  const core::Dataset data = core::synthetic_dataset(20);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 128);
  core::EventStore events;
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options_for(ModelKind::kMlp, OptimizerKind::kAdam, 1e-3f),
                                  &events);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  for (int step = 0; step < 2; ++step) {
    strategy.train_step(core::GlobalBatch{&data, std::span(order).subspan(step * 8, 8), 4});
  }
  int seen[2][core::kNumPhases][2] = {};
  for (const core::RunEvent& e : events.snapshot()) {
    EXPECT_LE(e.begin, e.end);
    if (e.phase == core::Phase::kBroadcastInit) continue;
    ASSERT_GE(e.step, 0);
    ASSERT_LT(e.step, 2);
    ++seen[e.device][static_cast<int>(e.phase)][e.step];
  }
  for (int d = 0; d < 2; ++d) {
    for (core::Phase p : {core::Phase::kSplit, core::Phase::kForward, core::Phase::kBackward,
                          core::Phase::kAllReduce, core::Phase::kUpdate}) {
      for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(seen[d][static_cast<int>(p)][s], 1)
            << "device " << d << " phase " << core::to_string(p) << " step " << s;
      }
    }
  }
}

class RecordingObserver : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart&) override {
    core::StepNeeds needs;
    needs.boundaries = true;
    return needs;
  }
  void on_collective_step(const vgpu::CollectiveStep& step) override { steps.push_back(step); }
  std::vector<vgpu::CollectiveStep> steps;
};

TEST(MirroredStrategy, TheObserverSeesEveryAllReduceStepOfTraining) {
  const core::Dataset data = core::synthetic_dataset(12);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 128);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f);
  o.all_reduce = "ring";
  core::MirroredStrategy strategy(registry.logical_devices(), o);
  RecordingObserver observer;
  strategy.add_listener(&observer);
  const auto order = core::shuffled_indices(data.size(), 1, 1);
  strategy.train_step(core::GlobalBatch{&data, std::span(order), 4});
  ASSERT_EQ(observer.steps.size(), 4u);  // 2(N-1) for the ring on 3 replicas
  std::size_t bytes = 0;
  for (const auto& t : observer.steps[0].transfers) bytes += t.bytes;
  EXPECT_EQ(bytes, strategy.replica(0).model().num_params() * sizeof(float));
}

// The one-shot adds the replicas' gradients in rank order, as reduce-to-one into /gpu:0 does:
// training with either gives the same bits.
TEST(MirroredStrategy, OneShotTrainingIsBitIdenticalToReduceToOne) {
  double loss_one_shot = 0, loss_reduce_to_one = 0;
  const auto one_shot = train_twice_params(3, 3, &loss_one_shot, "one-shot", ModelKind::kMlp);
  const auto reduce_to_one =
      train_twice_params(3, 3, &loss_reduce_to_one, "reduce-to-one", ModelKind::kMlp);
  EXPECT_EQ(loss_one_shot, loss_reduce_to_one);
  ASSERT_EQ(one_shot.size(), reduce_to_one.size());
  EXPECT_EQ(std::memcmp(one_shot.data(), reduce_to_one.data(), one_shot.size() * sizeof(float)), 0);
}

TEST(MirroredStrategy, TheAllReduceChoiceIsLoggedInTensorFlowsWords) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(3, 128);
  core::StrategyOptions o = options_for(ModelKind::kMlp, OptimizerKind::kSgd, 0.01f);
  core::MirroredStrategy strategy(registry.logical_devices(), o);  // "auto"
  EXPECT_EQ(strategy.all_reduce().name(), "ring");
  // TensorFlow 2.21 on CPU devices, 6 gradient tensors (3 Dense kernels and biases), as
  // scripts/check-tensorflow saw it log them.
  EXPECT_EQ(strategy.tensorflow_all_reduce_log(),
            "Collective all_reduce tensors: 6 all_reduces, num_devices = 3, group_size = 3, "
            "implementation = CommunicationImplementation.RING, num_packs = 1");
  EXPECT_EQ(strategy.device_tuple(),
            "('/job:localhost/replica:0/task:0/device:GPU:0', "
            "'/job:localhost/replica:0/task:0/device:GPU:1', "
            "'/job:localhost/replica:0/task:0/device:GPU:2')");
  ASSERT_EQ(strategy.all_reduce_notes().size(), 2u);
  o.all_reduce = "one-shot";
  core::MirroredStrategy one_shot(registry.logical_devices(), o);
  EXPECT_EQ(one_shot.all_reduce().name(), "one-shot");
  EXPECT_EQ(one_shot.tensorflow_all_reduce_log(), "");
  EXPECT_EQ(one_shot.all_reduce_notes().size(), 1u);
  o.all_reduce = "nccl";
  try {
    core::MirroredStrategy nccl(registry.logical_devices(), o);
    FAIL() << "NCCL on CPU-backed virtual GPUs must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirrorlab
