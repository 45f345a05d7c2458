// The watch that keeps a worker from waiting for ever on a dead one
// (virtualgpu/workers/worker_watch.h): a process that exits or is killed on this host is named
// within a few periods; a collective that waits past the timeout is reported; a stopped watch
// reports nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "virtualgpu/workers/worker_watch.h"

namespace mirrorlab::vgpu {
namespace {

using namespace std::chrono_literals;

// What the watch reported, waited for.
struct Reports {
  std::mutex mutex;
  std::promise<WorkerLoss> first;
  bool told = false;
  WorkerWatch::Lost handler() {
    return [this](const WorkerLoss& loss) {
      std::lock_guard lock(mutex);
      if (!told) first.set_value(loss);
      told = true;
    };
  }
};

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

pid_t sleeping_child() {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  return child;
}

// This process as worker 0, `child` as worker 1, on this host, looked at every 20 ms.
std::unique_ptr<WorkerWatch> watch_with(pid_t child, Reports& reports) {
  return std::make_unique<WorkerWatch>(
      std::vector<WorkerPlace>{{this_host(), getpid()}, {this_host(), child}}, 0, 60s,
      reports.handler(), 20ms);
}

TEST(WorkerWatch, AWorkerKilledOnThisHostIsNamedWithinASecond) {
  const pid_t child = sleeping_child();
  ASSERT_GT(child, 0);
  Reports reports;
  std::future<WorkerLoss> lost = reports.first.get_future();
  const auto watch = watch_with(child, reports);
  watch->set_activity("training step 7");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(lost.wait_for(0ms), std::future_status::timeout) << "reported a live worker";
  const auto killed = std::chrono::steady_clock::now();
  kill(child, SIGKILL);  // left a zombie: we do not reap it before the watch looks
  ASSERT_EQ(lost.wait_for(1s), std::future_status::ready) << "the dead worker was not seen";
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 1s);
  const WorkerLoss loss = lost.get();
  waitpid(child, nullptr, 0);
  EXPECT_EQ(loss.worker, 1);
  EXPECT_FALSE(loss.timed_out);
  EXPECT_NE(loss.sentence.find("worker 1 (pid " + std::to_string(child)), std::string::npos)
      << loss.sentence;
  EXPECT_NE(loss.sentence.find("training step 7"), std::string::npos) << loss.sentence;
}

TEST(WorkerWatch, AWorkerThatExitedAndWasReapedIsNamedToo) {
  const pid_t child = fork();
  if (child == 0) _exit(3);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(process_gone(child));
  EXPECT_FALSE(process_gone(getpid()));
  Reports reports;
  std::future<WorkerLoss> lost = reports.first.get_future();
  WorkerWatch watch({WorkerPlace{this_host(), child}, WorkerPlace{this_host(), getpid()}}, 1, 60s,
                    reports.handler(), 20ms);
  ASSERT_EQ(lost.wait_for(1s), std::future_status::ready);
  EXPECT_EQ(lost.get().worker, 0);
}

TEST(WorkerWatch, ACollectiveWaitingPastTheTimeoutNamesTheWorkersOnOtherHosts) {
  Reports reports;
  std::future<WorkerLoss> lost = reports.first.get_future();
  // A worker elsewhere cannot be looked at: only waited for.
  WorkerWatch watch({WorkerPlace{this_host(), getpid()}, WorkerPlace{"elsewhere", 1}}, 0, 200ms,
                    reports.handler(), 20ms);
  watch.set_activity("training step 3");
  std::this_thread::sleep_for(400ms);  // outside a collective, time does not count
  EXPECT_EQ(lost.wait_for(0ms), std::future_status::timeout);
  watch.enter_collective("the all-reduce across workers");
  ASSERT_EQ(lost.wait_for(2s), std::future_status::ready);
  const WorkerLoss loss = lost.get();
  EXPECT_TRUE(loss.timed_out);
  EXPECT_EQ(loss.worker, -1);
  EXPECT_NE(loss.sentence.find("the all-reduce across workers (training step 3)"),
            std::string::npos)
      << loss.sentence;
  EXPECT_NE(loss.sentence.find("worker 1 on elsewhere"), std::string::npos) << loss.sentence;
}

TEST(WorkerWatch, AStoppedWatchReportsNothing) {
  const pid_t child = sleeping_child();
  ASSERT_GT(child, 0);
  Reports reports;
  std::future<WorkerLoss> lost = reports.first.get_future();
  {
    const auto watch = watch_with(child, reports);
    watch->stop();  // every worker is past its last collective: a peer may exit now
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(lost.wait_for(0ms), std::future_status::timeout);
}

}  // namespace
}  // namespace mirrorlab::vgpu
