// The window on worker 0 and the workers that follow it (core/session/worker_followers.h), as
// `mpirun -np 2 mirrorlab gui` runs them, here with the two workers as threads of one process
// (vgpu::ThreadWorkers, the same WorkerGroup seam as MPI's): worker 0's session steps, rebuilds
// with other settings, holds a step and closes, and the follower takes every step with it,
// bit-identical; a setting that cannot work is an error of the session, and the follower goes on
// following. The same over MPI: tests/app/test_cli_workers.cpp and tests/gui/test_gui_app.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "core/session/worker_followers.h"
#include "tests/support/hang_guard.h"
#include "virtualgpu/workers/thread_worker_group.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const core::FashionMnist> small_data() {
  auto data = std::make_shared<core::FashionMnist>();
  data->train = core::synthetic_dataset(256, 3);
  data->test = core::synthetic_dataset(64, 9);
  return data;
}

core::SessionConfig settings(int gpus, core::ModelKind model, std::size_t memory_mib = 64) {
  core::SessionConfig c;
  c.settings.devices.gpus = gpus;
  c.settings.devices.memory_limits_mib = {static_cast<std::int64_t>(memory_mib)};
  c.settings.model = model;
  c.settings.optimizer.learning_rate = 0.0123f;
  c.settings.batch_per_replica = 8;
  c.settings.epochs = 2;
  c.settings.workers = 2;
  return c;
}

// Worker 1 follows on a thread of its own from the start; quit() ends it.
class Followed : public ::testing::Test {
 protected:
  void SetUp() override {
    follower_ = std::async(std::launch::async, [this] {
      // Its own flags' settings (the app's): whatever worker 0 sends replaces them.
      return core::follow_worker_0(group_.worker(1), data_, settings(1, core::ModelKind::kMlp));
    });
  }
  void TearDown() override {
    if (follower_.valid()) {
      group_.abort("the test ended");  // never leave the follower waiting
      follower_.wait();
    }
  }
  core::SessionConfig followed(core::SessionConfig c) {
    c.other_workers = followers_.maker();
    return c;
  }
  core::SessionSnapshot steps(core::TrainingSession& session, int n) {
    for (int i = 0; i < n; ++i) session.step();
    EXPECT_TRUE(session.wait_until_idle(60));
    core::SessionSnapshot s;
    session.update(s);
    return s;
  }

  std::shared_ptr<const core::FashionMnist> data_ = small_data();
  vgpu::ThreadWorkers group_{2};
  core::WorkerFollowers followers_{group_.worker(0)};
  std::future<std::string> follower_;
};

TEST_F(Followed, TheFollowerTakesEveryStepBitIdenticalAndRebuildsAsWorker0Does) {
  testing::within_seconds(180, "a session followed by another worker", [&] {
    std::uint64_t followed_cnn = 0;
    {
      core::TrainingSession session(data_, followed(settings(2, core::ModelKind::kMlp)));
      const core::SessionSnapshot s = steps(session, 3);
      EXPECT_EQ(s.state, core::SessionState::kPaused) << s.error;
      EXPECT_EQ(s.steps_done, 3);
      EXPECT_EQ(s.replicas_in_sync, 4);
      EXPECT_EQ(s.global_batch, 32u);  // 8 per replica x 2 devices x 2 workers
      ASSERT_EQ(s.workers.size(), 2u);
      EXPECT_NE(s.workers_are.find("mpirun"), std::string::npos) << s.workers_are;
      ASSERT_EQ(s.workers[1].devices.size(), 2u);
      EXPECT_EQ(s.workers[1].devices[1].name, "/gpu:1");
      EXPECT_GT(s.workers[1].devices[1].in_use, 0u);
      EXPECT_EQ(s.workers[1].devices[1].limit, std::size_t{64} << 20);
      EXPECT_NE(s.workers[1].tf_config.find(R"("index":1)"), std::string::npos);
      // The strategy compared both workers' weights after each step, and they were equal.
      EXPECT_EQ(s.workers_found_in_sync, 3);
      EXPECT_NE(s.workers[0].fingerprint, 0u);
      EXPECT_EQ(s.workers[1].fingerprint, s.workers[0].fingerprint);
    }
    {
      // Another model on 1 device per worker: the follower rebuilds the same.
      core::TrainingSession session(data_, followed(settings(1, core::ModelKind::kCnn)));
      const core::SessionSnapshot s = steps(session, 2);
      EXPECT_EQ(s.state, core::SessionState::kPaused) << s.error;
      ASSERT_EQ(s.workers.size(), 2u);
      ASSERT_EQ(s.workers[1].devices.size(), 1u);
      EXPECT_EQ(s.workers_found_in_sync, 2);
      EXPECT_EQ(s.workers[1].fingerprint, s.workers[0].fingerprint);
      followed_cnn = s.workers[0].fingerprint;
    }
    followers_.quit();
    EXPECT_EQ(follower_.get(), "");
    // The same run with the other worker as a thread of this process: the same weights.
    core::TrainingSession threads(data_, settings(1, core::ModelKind::kCnn));
    const core::SessionSnapshot s = steps(threads, 2);
    EXPECT_EQ(s.workers[0].fingerprint, followed_cnn);
  });
}

TEST_F(Followed, ASettingThatCannotWorkIsTheSessionsErrorAndTheFollowerGoesOn) {
  testing::within_seconds(120, "a followed session that does not fit", [&] {
    try {
      core::TrainingSession session(data_, followed(settings(2, core::ModelKind::kMlp, 1)));
      ADD_FAILURE() << "a 1 MiB device held the MLP";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("/gpu:0"), std::string::npos) << e.what();
    }
    core::TrainingSession session(data_, followed(settings(2, core::ModelKind::kMlp)));
    const core::SessionSnapshot s = steps(session, 1);
    EXPECT_EQ(s.steps_done, 1) << s.error;
    EXPECT_EQ(s.workers_found_in_sync, 1);
  });
  followers_.quit();
  EXPECT_EQ(follower_.get(), "");
}

TEST_F(Followed, ClosingWhileAStepIsHeldLetsTheStepEndOnEveryWorker) {
  testing::within_seconds(120, "closing a held, followed step", [&] {
    {
      core::TrainingSession session(data_, followed(settings(2, core::ModelKind::kMlp)));
      session.next_phase();  // held after its split; the follower waits inside the step
      core::SessionSnapshot s;
      for (int i = 0; i < 2000 && !s.held_at; ++i) {
        std::this_thread::sleep_for(5ms);
        session.update(s);
      }
      ASSERT_TRUE(s.held_at);
    }  // the window closes: the held step runs to its end, then the session ends
    EXPECT_EQ(followers_.lost(), "");
    followers_.quit();
    EXPECT_EQ(follower_.get(), "");
  });
}

// Fails worker 0's second step before its replicas start: the follower is inside that step.
class FailsSecondStep : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart&) override {
    if (++steps_ == 2) throw std::runtime_error("worker 0's own failure");
    return {};
  }

 private:
  int steps_ = 0;
};

TEST_F(Followed, AStepThatFailsOnWorker0LeavesTheFollowersLostAndARebuildSaysSo) {
  testing::within_seconds(120, "a followed step failing on worker 0", [&] {
    FailsSecondStep failing;
    core::TrainingSession session(data_, followed(settings(2, core::ModelKind::kMlp)));
    session.strategy().add_listener(&failing);  // before the first step
    const core::SessionSnapshot s = steps(session, 2);
    EXPECT_EQ(s.state, core::SessionState::kFailed);
    EXPECT_NE(s.error.find("worker 0's own failure"), std::string::npos) << s.error;
    EXPECT_NE(followers_.lost().find("can follow no other run"), std::string::npos)
        << followers_.lost();
    try {
      core::TrainingSession again(data_, followed(settings(2, core::ModelKind::kMlp)));
      ADD_FAILURE() << "a session was built with followers stuck in a step";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("can follow no other run"), std::string::npos)
          << e.what();
    }
  });  // TearDown releases the follower, still inside step 2's exchange
}

TEST(SessionConfigText, CarriesWhatTheFollowersBuildBitForBit) {
  core::SessionConfig c = settings(3, core::ModelKind::kCnn, 300);
  c.settings.optimizer.kind = core::OptimizerKind::kNadam;
  c.settings.optimizer.learning_rate = 0.1f + 1e-9f;
  c.settings.allreduce = "reduce-to-one";
  c.settings.seed = 0xFFFFFFFFFFFFFFFFull;
  c.settings.loss_scaling = core::LossScaling::kBatchMean;
  c.settings.max_steps = 17;
  core::SessionConfig base = settings(1, core::ModelKind::kMlp);
  base.make_devices = [](vgpu::DeviceRegistry&, const auto&) {};
  const core::SessionConfig back =
      core::session_config_from_text(core::session_config_text(c), base);
  const auto devices = core::session_devices(back);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[2].memory_limit_mib, 300u);
  EXPECT_TRUE(back.settings == c.settings);  // every setting, each walked in test_run_settings
  EXPECT_EQ(back.settings.optimizer.learning_rate, c.settings.optimizer.learning_rate);
  EXPECT_EQ(back.settings.seed, c.settings.seed);
  EXPECT_TRUE(back.make_devices) << "the follower's own way of making devices is kept";
  EXPECT_THROW(core::session_config_from_text("{\"gpus\": [1]}", base), std::invalid_argument);
  EXPECT_THROW(core::session_config_from_text("{\"gpus\": 1}", base), std::invalid_argument)
      << "a message without every setting is not worker 0's";
  EXPECT_THROW(core::session_config_from_text("not json", base), std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab
