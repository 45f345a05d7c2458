// The window's session on worker 0 followed by worker 1 over MPI (core/session/worker_followers.h
// over vgpu::MpiWorkerGroup), run by ctest as 2 MPI ranks: worker 0 builds a session, steps,
// waits (the follower asleep in MPI_Ibcast), rebuilds with another model and device count as the
// window's controls do, and closes; worker 1 follows every command and returns. The same protocol
// with the workers as threads: tests/core/session/test_worker_followers.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "core/session/worker_followers.h"
#include "virtualgpu/mpi/mpi_worker_group.h"

namespace mirrorlab {
namespace {

using namespace std::chrono_literals;

core::SessionConfig settings(int gpus, core::ModelKind model) {
  core::SessionConfig c;
  c.settings.devices.gpus = gpus;
  c.settings.devices.memory_limits_mib = {64};
  c.settings.model = model;
  c.settings.batch_per_replica = 8;
  c.settings.epochs = 2;
  c.settings.workers = 2;
  return c;
}

// Worker 0's window: one session after another, each stepped and looked at.
core::SessionSnapshot steps(core::WorkerFollowers& followers, core::SessionConfig c, int n,
                            const std::shared_ptr<const core::FashionMnist>& data) {
  c.other_workers = followers.maker();
  core::TrainingSession session(data, c);
  for (int i = 0; i < n; ++i) session.step();
  EXPECT_TRUE(session.wait_until_idle(120));
  core::SessionSnapshot s;
  session.update(s);
  return s;
}

TEST(MpiFollowers, Worker1FollowsEveryStepAndRebuildOfWorker0sWindowBitIdentical) {
  vgpu::MpiWorkerGroup group(60s, [](const vgpu::WorkerLoss& loss) {
    std::fprintf(stderr, "test_mpi_followers: %s\n", loss.sentence.c_str());
    std::fflush(nullptr);
    _exit(3);  // a test must never hang
  });
  ASSERT_EQ(group.size(), 2);
  auto data = std::make_shared<core::FashionMnist>();
  data->train = core::synthetic_dataset(256, 3);
  data->test = core::synthetic_dataset(64, 9);
  if (group.rank() == 1) {
    EXPECT_EQ(core::follow_worker_0(group, data, settings(1, core::ModelKind::kMlp)), "");
  } else {
    core::WorkerFollowers followers(group);
    const core::SessionSnapshot mlp = steps(followers, settings(2, core::ModelKind::kMlp), 3, data);
    EXPECT_EQ(mlp.steps_done, 3) << mlp.error;
    EXPECT_NE(mlp.workers_are.find("mpirun"), std::string::npos);
    ASSERT_EQ(mlp.workers.size(), 2u);
    ASSERT_EQ(mlp.workers[1].devices.size(), 2u);
    EXPECT_GT(mlp.workers[1].devices[1].in_use, 0u);
    EXPECT_NE(mlp.workers[1].place, mlp.workers[0].place);  // another process
    EXPECT_EQ(mlp.workers_found_in_sync, 3);
    EXPECT_EQ(mlp.workers[1].fingerprint, mlp.workers[0].fingerprint);
    std::this_thread::sleep_for(500ms);  // the window paused: the follower waits asleep
    const core::SessionSnapshot cnn = steps(followers, settings(1, core::ModelKind::kCnn), 2, data);
    EXPECT_EQ(cnn.steps_done, 2) << cnn.error;
    ASSERT_EQ(cnn.workers.size(), 2u);
    EXPECT_EQ(cnn.workers[1].devices.size(), 1u);
    EXPECT_EQ(cnn.workers_found_in_sync, 2);
    EXPECT_EQ(cnn.workers[1].fingerprint, cnn.workers[0].fingerprint);
    EXPECT_EQ(followers.lost(), "");
    followers.quit();
  }
  group.finish();
}

}  // namespace
}  // namespace mirrorlab
