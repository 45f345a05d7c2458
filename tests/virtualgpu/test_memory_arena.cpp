// The capped arena: exact accounting, the out-of-memory error and its advice.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::vgpu {
namespace {

TEST(MemoryArena, CountsExactBytesAndPeak) {
  MemoryArena arena("/gpu:0", 1000);
  Allocation a = arena.allocate(100, "a");
  Allocation b = arena.allocate(333, "b");
  EXPECT_EQ(arena.in_use(), 433u);
  EXPECT_EQ(arena.peak(), 433u);
  a.reset();
  EXPECT_EQ(arena.in_use(), 333u);
  EXPECT_EQ(arena.peak(), 433u);
  arena.reset_peak();
  EXPECT_EQ(arena.peak(), 333u);
  b = arena.allocate(667, "c");  // exactly fills the limit once b's old block is given back
  EXPECT_EQ(arena.in_use(), 667u);
}

TEST(MemoryArena, BlocksAreZeroedAndAligned) {
  MemoryArena arena("/gpu:0", 1 << 20);
  Allocation a = arena.allocate(1000, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(a.as<unsigned char>()[i], 0);
}

TEST(MemoryArena, ZeroBytesGivesEmptyAllocation) {
  MemoryArena arena("/gpu:0", 10);
  Allocation a = arena.allocate(0, "nothing");
  EXPECT_FALSE(a);
  EXPECT_EQ(arena.in_use(), 0u);
}

TEST(MemoryArena, OverTheCapThrowsAClearErrorAndStaysUsable) {
  MemoryArena arena("/gpu:1", 3 * kMiB);
  Allocation a = arena.allocate(2 * kMiB, "dense/kernel");
  try {
    arena.allocate(2 * kMiB, "conv2d/kernel gradient");
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/gpu:1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("conv2d/kernel gradient"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2.0 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3.0 MiB"), std::string::npos) << msg;
    // What to change is the front ends' to say (tests/app/test_advice.cpp); here, the typed fact.
    EXPECT_EQ(e.ran_out(), MemoryRanOut::kLimit);
    EXPECT_EQ(e.device(), "/gpu:1");
    EXPECT_EQ(e.requested(), 2 * kMiB);
    EXPECT_EQ(e.in_use(), 2 * kMiB);
    EXPECT_EQ(e.limit(), 3 * kMiB);
  }
  EXPECT_EQ(arena.in_use(), 2 * kMiB);  // the failed request counted nothing
  Allocation b = arena.allocate(kMiB, "fits");
  EXPECT_EQ(arena.in_use(), 3 * kMiB);
}

TEST(MemoryArena, MoveTransfersOwnership) {
  MemoryArena arena("/gpu:0", 100);
  Allocation a = arena.allocate(40, "a");
  Allocation b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(b.bytes(), 40u);
  EXPECT_EQ(arena.in_use(), 40u);
  { Allocation c = std::move(b); }
  EXPECT_EQ(arena.in_use(), 0u);
}

TEST(MemoryArena, ConcurrentAllocationsKeepExactCounts) {
  MemoryArena arena("/gpu:0", 1 << 30);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&arena, t] {
      for (int i = 0; i < 500; ++i) {
        Allocation a = arena.allocate(static_cast<std::size_t>(t * 7 + i % 13 + 1), "x");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(arena.in_use(), 0u);
  EXPECT_GT(arena.peak(), 0u);
  EXPECT_LE(arena.peak(), 4u * (3 * 7 + 13));
}

// An allocator standing in for CUDA device memory: it counts what the arena asks of it and can
// run dry before the arena's cap, as a card shared with other programs can.
class CountingAllocator : public BlockAllocator {
 public:
  CountingAllocator(int* live, std::size_t capacity) : live_(live), capacity_(capacity) {}
  void* allocate(std::size_t bytes) override {
    if (bytes > capacity_) return nullptr;
    capacity_ -= bytes;
    ++*live_;
    return host_->allocate(bytes);
  }
  void release(void* ptr, std::size_t bytes) noexcept override {
    capacity_ += bytes;
    --*live_;
    host_->release(ptr, bytes);
  }
  bool host_accessible() const override { return false; }

 private:
  int* live_;
  std::size_t capacity_;
  std::unique_ptr<BlockAllocator> host_ = make_host_allocator();
};

TEST(MemoryArena, TakesItsBlocksFromTheGivenAllocator) {
  int live = 0;
  MemoryArena arena("/gpu:1", 1000, std::make_unique<CountingAllocator>(&live, 1000));
  EXPECT_FALSE(arena.host_accessible());
  {
    Allocation a = arena.allocate(100, "a");
    Allocation b = arena.allocate(200, "b");
    EXPECT_EQ(live, 2);
    EXPECT_EQ(arena.in_use(), 300u);
  }
  EXPECT_EQ(live, 0);
  EXPECT_EQ(arena.in_use(), 0u);
  EXPECT_TRUE(MemoryArena("/gpu:0", 10).host_accessible());
}

TEST(MemoryArena, AllocatorRunningDryUnderTheCapRollsBackTheCount) {
  int live = 0;
  MemoryArena arena("/gpu:1", 1000, std::make_unique<CountingAllocator>(&live, 150));
  Allocation a = arena.allocate(100, "a");
  // Under the cap, but nothing behind it.
  EXPECT_THROW(arena.allocate(100, "b"), OutOfMemoryError);
  EXPECT_EQ(arena.in_use(), 100u);
  EXPECT_EQ(arena.peak(), 100u);
  EXPECT_EQ(live, 1);
}

// Over a device-memory arena's cap (a logical GPU's --memory-limit) the sentence is the CPU
// arena's, word for word: the cap is the arena's, whatever memory is behind it.
TEST(MemoryArena, OverTheCapOfDeviceMemoryGivesTheSameSentenceAsOnTheCpu) {
  int live = 0;
  MemoryArena device("/gpu:1", 3 * kMiB, std::make_unique<CountingAllocator>(&live, 8 * kMiB));
  MemoryArena host("/gpu:1", 3 * kMiB);
  Allocation a = device.allocate(2 * kMiB, "dense/kernel");
  Allocation b = host.allocate(2 * kMiB, "dense/kernel");
  std::string device_message, host_message;
  try {
    device.allocate(2 * kMiB, "conv2d/kernel gradient");
  } catch (const OutOfMemoryError& e) {
    device_message = e.what();
    EXPECT_TRUE(e.over_limit());
  }
  try {
    host.allocate(2 * kMiB, "conv2d/kernel gradient");
  } catch (const OutOfMemoryError& e) {
    host_message = e.what();
  }
  ASSERT_FALSE(host_message.empty());
  EXPECT_EQ(device_message, host_message);
  EXPECT_EQ(live, 1);  // the refused request never reached the allocator
}

// A GPU whose cudaMalloc fails below the device's limit (the card is full), through the
// allocator seam: the arena's error names the device, the request and the card, and says what
// to do, instead of a bare std::bad_alloc.
class FullCardAllocator final : public CountingAllocator {
 public:
  FullCardAllocator(int* live, std::size_t capacity) : CountingAllocator(live, capacity) {}
  std::string exhausted() const override { return gpu_memory_exhausted(0); }
  MemoryRanOut ran_out() const override { return MemoryRanOut::kGpu; }
};

TEST(MemoryArena, FullCardUnderTheLimitIsAClearErrorNamingDeviceRequestAndFix) {
  int live = 0;
  MemoryArena arena("/gpu:1", 1024 * kMiB, std::make_unique<FullCardAllocator>(&live, 5 * kMiB));
  Allocation a = arena.allocate(4 * kMiB, "dense/kernel");
  try {
    arena.allocate(2 * kMiB, "conv2d/kernel gradient");
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_FALSE(e.over_limit());
    for (const char* words :
         {"/gpu:1: out of memory", "2.0 MiB for conv2d/kernel gradient",
          "4.0 MiB of its 1024.0 MiB limit in use", "GPU 0 has no free memory"}) {
      EXPECT_NE(msg.find(words), std::string::npos) << words << " missing from: " << msg;
    }
    EXPECT_EQ(e.ran_out(), MemoryRanOut::kGpu);  // the fix is said by tests/app/test_advice.cpp
    EXPECT_EQ(e.requested(), 2 * kMiB);
    EXPECT_EQ(e.in_use(), 4 * kMiB);
  }
  EXPECT_EQ(arena.in_use(), 4 * kMiB);
  Allocation b = arena.allocate(kMiB, "fits on the card");
  EXPECT_EQ(live, 2);
}

// An allocator whose device fails (a CUDA error, not a full card): the error goes through and
// the bytes it never gave are not counted.
class FailingAllocator final : public BlockAllocator {
 public:
  void* allocate(std::size_t) override { throw std::runtime_error("the device failed"); }
  void release(void*, std::size_t) noexcept override {}
  bool host_accessible() const override { return false; }
};

TEST(MemoryArena, AllocatorErrorRollsBackTheCount) {
  MemoryArena arena("/gpu:1", 1000, std::make_unique<FailingAllocator>());
  EXPECT_THROW(arena.allocate(100, "a"), std::runtime_error);
  EXPECT_EQ(arena.in_use(), 0u);
  EXPECT_EQ(arena.peak(), 0u);
}

}  // namespace
}  // namespace mirrorlab::vgpu
