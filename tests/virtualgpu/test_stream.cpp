// Streams: in-order work on the device's own thread, events, kept errors.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "virtualgpu/devices/stream.h"

namespace mirrorlab::vgpu {
namespace {

TEST(Stream, RunsWorkInOrderOnItsOwnThread) {
  Stream stream("/gpu:0");
  std::vector<int> order;
  std::thread::id worker;
  for (int i = 0; i < 100; ++i) {
    stream.enqueue([&order, &worker, i] {
      order.push_back(i);
      worker = std::this_thread::get_id();
    });
  }
  stream.synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(Stream, BindsItsThreadToOneCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  Stream stream("/gpu:0");
  EXPECT_EQ(stream.bound_cpu(), -1);
  EXPECT_FALSE(stream.bind_to_cpu(-1));
  ASSERT_TRUE(stream.bind_to_cpu(cpu));
  EXPECT_EQ(stream.bound_cpu(), cpu);
  int ran_on = -1, cpus_allowed = 0;
  stream.enqueue([&] {
    ran_on = sched_getcpu();
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0) cpus_allowed = CPU_COUNT(&mine);
  });
  stream.synchronize();
  EXPECT_EQ(ran_on, cpu);
  EXPECT_EQ(cpus_allowed, 1);
}

TEST(Stream, EventsCompleteInOrderWithTimestamps) {
  Stream stream("/gpu:0");
  auto first = stream.record_event();
  std::atomic<bool> release{false};
  stream.enqueue([&release] {
    while (!release.load()) std::this_thread::yield();
  });
  auto second = stream.record_event();
  first->wait();
  EXPECT_TRUE(first->done());
  EXPECT_FALSE(second->done());  // the stream is held by the work before it
  release = true;
  second->wait();
  EXPECT_LE(first->time(), second->time());
  stream.synchronize();
}

TEST(Stream, KeepsTheFirstErrorAndGoesOn) {
  Stream stream("/gpu:0");
  int ran = 0;
  stream.enqueue([] { throw std::runtime_error("first"); });
  stream.enqueue([] { throw std::runtime_error("second"); });
  stream.enqueue([&ran] { ++ran; });
  try {
    stream.synchronize();
    FAIL() << "expected the kept error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_EQ(ran, 1);
  EXPECT_NO_THROW(stream.synchronize());  // cleared once reported
}

TEST(Stream, StreamsRunConcurrently) {
  // Each stream waits for the other: only possible if both threads run at once.
  Stream a("/gpu:0"), b("/gpu:1");
  std::atomic<int> arrived{0};
  auto meet = [&arrived] {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  };
  a.enqueue(meet);
  b.enqueue(meet);
  a.synchronize();
  b.synchronize();
  EXPECT_EQ(arrived.load(), 2);
}

TEST(Stream, DestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    Stream stream("/gpu:0");
    for (int i = 0; i < 50; ++i) stream.enqueue([&ran] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 50);
}

}  // namespace
}  // namespace mirrorlab::vgpu

namespace mirrorlab::vgpu {
namespace {

TEST(Stream, PollingWaitsKeepTheSameOrderErrorsAndShutdown) {
  std::atomic<int> ran{0};
  {
    Stream stream("/gpu:0");
    stream.set_spin_wait(std::chrono::microseconds(200));
    std::vector<int> order;
    for (int round = 0; round < 50; ++round) {
      // Waits of different lengths exercise both the sleeping and the polling part.
      stream.enqueue([&order, round] {
        std::this_thread::sleep_for(std::chrono::microseconds(round % 5 == 0 ? 2000 : 10));
        order.push_back(round);
      });
      stream.synchronize();
    }
    ASSERT_EQ(order.size(), 50u);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
    stream.enqueue([] { throw std::runtime_error("kept"); });
    EXPECT_THROW(stream.synchronize(), std::runtime_error);
    for (int i = 0; i < 20; ++i) stream.enqueue([&ran] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace mirrorlab::vgpu
