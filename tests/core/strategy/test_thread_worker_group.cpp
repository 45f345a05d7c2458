// Several workers in one process (virtualgpu/workers/thread_worker_group.h,
// core/session/other_workers.h): the exchanges every worker meets in, what one worker failing does
// to the others (never a hang), and training through it: 2 workers x 2 devices give the weights of
// 1 worker x 4 devices and of one device, as 2 MPI ranks do
// (tests/core/strategy/test_multi_worker.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/hang_guard.h"
#include "tests/support/training_reference.h"
#include "tests/support/worker_threads.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/workers/thread_worker_group.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;

using testing::on_every_worker;

TEST(ThreadWorkers, SumBroadcastAndGatherOverThreeWorkers) {
  testing::within_seconds(30, "the exchanges", [] {
    vgpu::ThreadWorkers group(3);
    std::vector<std::vector<float>> floats(3);
    std::vector<std::vector<double>> doubles(3);
    std::vector<std::vector<float>> broadcast(3);
    std::vector<std::vector<std::string>> gathered(3);
    const auto errors = on_every_worker(group.size(), [&](int w) {
      vgpu::WorkerGroup& me = group.worker(w);
      EXPECT_EQ(me.rank(), w);
      EXPECT_EQ(me.size(), 3);
      auto& f = floats[static_cast<std::size_t>(w)];
      f = {1.0f * static_cast<float>(w), 0.1f, 1e8f};
      me.all_reduce_sum(std::span<float>(f));
      auto& d = doubles[static_cast<std::size_t>(w)];
      d = {static_cast<double>(w + 1)};
      me.all_reduce_sum(std::span<double>(d));
      auto& b = broadcast[static_cast<std::size_t>(w)];
      b.assign(4, static_cast<float>(w));
      me.broadcast(std::span<float>(b), 2);
      gathered[static_cast<std::size_t>(w)] = me.all_gather("worker " + std::to_string(w));
    });
    EXPECT_EQ(errors, std::vector<std::string>(3));
    // In rank order, 0.1 + 0.1 + 0.1 in float, the same bits everywhere.
    const float tenth = (0.1f + 0.1f) + 0.1f;
    for (int w = 0; w < 3; ++w) {
      const auto i = static_cast<std::size_t>(w);
      EXPECT_EQ(floats[i], (std::vector<float>{3.0f, tenth, 3e8f}));
      EXPECT_EQ(doubles[i], std::vector<double>{6.0});
      EXPECT_EQ(broadcast[i], std::vector<float>(4, 2.0f));
      EXPECT_EQ(gathered[i], (std::vector<std::string>{"worker 0", "worker 1", "worker 2"}));
    }
    EXPECT_EQ(group.worker(1).transport(), "threads of one process (in-process stand-in for MPI)");
    EXPECT_EQ(vgpu::tf_config(group.worker(1)).find(R"("task":{"type":"worker","index":1})") !=
                  std::string::npos,
              true);
  });
}

TEST(ThreadWorkers, AbortReleasesAWorkerWaitingForOneThatNeverComes) {
  testing::within_seconds(30, "a worker waiting for a lost one", [] {
    vgpu::ThreadWorkers group(2);
    std::string said;
    std::thread waiting([&] {
      std::vector<float> v(8, 1.0f);
      try {
        group.worker(0).all_reduce_sum(std::span<float>(v));
      } catch (const vgpu::WorkersAborted& e) {
        said = e.what();
      }
    });
    std::this_thread::sleep_for(50ms);
    group.abort("worker 1 ran out of memory");
    waiting.join();
    EXPECT_NE(said.find("worker 0 stopped waiting for the others: worker 1 ran out of memory"),
              std::string::npos)
        << said;
    // And every exchange after it, on any worker, at once.
    EXPECT_THROW(group.worker(1).all_gather("late"), vgpu::WorkersAborted);
  });
}

TEST(ThreadWorkers, BuffersOfDifferentSizesAreRefusedOnEveryWorker) {
  testing::within_seconds(30, "different sizes", [] {
    vgpu::ThreadWorkers group(2);
    const auto errors = on_every_worker(group.size(), [&](int w) {
      std::vector<float> v(static_cast<std::size_t>(3 + w), 1.0f);
      group.worker(w).all_reduce_sum(std::span<float>(v));
    });
    // The last to arrive finds the sizes differ and says so; the other stops waiting.
    const std::string both = errors[0] + " | " + errors[1];
    EXPECT_NE(both.find("an all-reduce between workers of different sizes"), std::string::npos)
        << both;
    EXPECT_NE(both.find("stopped waiting for the others"), std::string::npos) << both;
  });
}

// ---- training through it ------------------------------------------------------------------

core::StrategyOptions batch_mean_sgd() {
  core::StrategyOptions o;
  o.model = core::ModelKind::kMlp;
  o.optimizer.kind = core::OptimizerKind::kSgd;
  o.optimizer.learning_rate = 0.05f;
  o.seed = 11;
  o.loss_scaling = core::LossScaling::kBatchMean;
  return o;
}

constexpr std::size_t kExamples = 82, kGlobal = 24;  // every 4th batch uneven: 10 on 4 replicas
constexpr int kSteps = 12;

std::vector<float> train(const core::StrategyOptions& o, int devices, vgpu::WorkerGroup* workers) {
  return testing_reference::mirrored_training(core::synthetic_dataset(kExamples), o, devices,
                                              workers, kGlobal, kSteps, 5);
}

TEST(ThreadWorkers, TwoWorkersOfTwoDevicesTrainAsOneWorkerOfFourAndAsOneDevice) {
  testing::within_seconds(120, "training as 2 workers", [] {
    const core::StrategyOptions o = batch_mean_sgd();
    vgpu::ThreadWorkers group(2);
    std::vector<std::vector<float>> by_worker(2);
    const auto errors = on_every_worker(group.size(), [&](int w) {
      by_worker[static_cast<std::size_t>(w)] = train(o, 2, &group.worker(w));
    });
    ASSERT_EQ(errors, std::vector<std::string>(2));
    ASSERT_EQ(by_worker[0].size(), by_worker[1].size());
    EXPECT_EQ(
        std::memcmp(by_worker[0].data(), by_worker[1].data(), by_worker[0].size() * sizeof(float)),
        0)
        << "the two workers' weights differ";
    testing_reference::expect_close_weights(by_worker[0], train(o, 4, nullptr), 1e-5,
                                            "2 workers x 2 devices against 1 worker x 4 devices");
    const std::vector<float> one_device = testing_reference::plain_single_device_training(
        core::synthetic_dataset(kExamples), o, kGlobal, kSteps, 5);
    testing_reference::expect_close_weights(by_worker[0], one_device, 1e-5,
                                            "2 workers x 2 devices against 1 device");
  });
}

// ---- a session of several workers ----------------------------------------------------------

std::shared_ptr<const core::FashionMnist> small_data() {
  auto data = std::make_shared<core::FashionMnist>();
  data->train = core::synthetic_dataset(256, 3);
  data->test = core::synthetic_dataset(64, 9);
  return data;
}

core::SessionConfig two_workers(std::size_t memory_mib = 64) {
  core::SessionConfig c;
  c.settings.devices.gpus = 2;
  c.settings.devices.memory_limits_mib = {static_cast<std::int64_t>(memory_mib)};
  c.settings.model = core::ModelKind::kMlp;
  c.settings.batch_per_replica = 16;
  c.settings.epochs = 3;
  c.settings.workers = 2;
  return c;
}

TEST(SessionOfWorkers, StepsEveryWorkerAndShowsEachOnesDevicesAndTfConfig) {
  testing::within_seconds(120, "a session of 2 workers", [] {
    core::TrainingSession session(small_data(), two_workers());
    for (int i = 0; i < 5; ++i) session.step();
    ASSERT_TRUE(session.wait_until_idle(60));
    core::SessionSnapshot s;
    session.update(s);
    EXPECT_EQ(s.state, core::SessionState::kPaused) << s.error;
    EXPECT_EQ(s.steps_done, 5);
    EXPECT_EQ(s.replicas_in_sync, 4);
    EXPECT_EQ(s.global_batch, 64u);   // 16 per replica x 2 devices x 2 workers
    ASSERT_EQ(s.devices.size(), 2u);  // worker 0's, as the rest of the snapshot
    ASSERT_EQ(s.workers.size(), 2u);
    EXPECT_EQ(s.workers[1].devices.size(), 2u);
    EXPECT_EQ(s.workers[1].devices[1].name, "/gpu:1");
    EXPECT_GT(s.workers[1].devices[1].in_use, 0u);
    EXPECT_NE(s.workers[1].tf_config.find(R"("index":1)"), std::string::npos)
        << s.workers[1].tf_config;
    EXPECT_EQ(s.steps.back().examples, 64);  // the statistics of every worker's replicas
  });
}

TEST(SessionOfWorkers, StoppingAStepHeldInsideItsPhasesReleasesTheOtherWorker) {
  testing::within_seconds(60, "stopping a held step of 2 workers", [] {
    core::TrainingSession session(small_data(), two_workers());
    session.next_phase();  // worker 0 holds after its split; worker 1 waits in the all-reduce
    core::SessionSnapshot s;
    for (int i = 0; i < 2000 && !s.held_at; ++i) {
      std::this_thread::sleep_for(5ms);
      session.update(s);
    }
    ASSERT_TRUE(s.held_at);
    session.stop();  // returns; the destructor must not hang either
  });
}

TEST(SessionOfWorkers, AModelThatDoesNotFitIsAnErrorOfTheSessionNotAHang) {
  testing::within_seconds(60, "a session of 2 workers that does not fit", [] {
    try {
      core::TrainingSession session(small_data(), two_workers(1));
      ADD_FAILURE() << "a 1 MiB device held the MLP";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("/gpu:0"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace mirrorlab
