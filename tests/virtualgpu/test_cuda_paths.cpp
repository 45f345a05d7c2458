// The CUDA code paths above the thin interfaces (virtualgpu/cuda/cuda_api.h, nccl_api.h), run on
// any machine against the fakes of tests/support/cuda/fake_cuda_api.h: the cudaMalloc allocator and
// its arena, the devices' streams, the CUDA transport (ring, reduce-to-one, one-shot; one card and
// several, with and without peer access), the NCCL all-reduce and its fallback. Each test checks
// the numbers bit for bit (small integers: any order of the sums is exact) and that every call
// kept CUDA's rules (the fake's violations() and leaks() are empty). What is left to a GPU is
// each interface method's one runtime call (cuda_api_runtime.cpp, nccl_api_library.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/all_reduce_check.h"
#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_nccl_api.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::testing {
namespace {

using vgpu::Allocation;
using vgpu::Device;
using vgpu::ReduceOp;

::testing::AssertionResult kept_cudas_rules(const FakeCudaApi& api) {
  const std::vector<std::string> broken = api.violations();
  if (broken.empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << broken.size() << " calls broke CUDA's rules:";
  for (std::size_t i = 0; i < broken.size() && i < 10; ++i) failure << "\n  " << broken[i];
  return failure;
}

::testing::AssertionResult nothing_left(const FakeCudaApi& api) {
  const std::vector<std::string> left = api.leaks();
  if (left.empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << left.size() << " left alive:";
  for (std::size_t i = 0; i < left.size() && i < 10; ++i) failure << "\n  " << left[i];
  return failure;
}

// ---- the fake's own rules must be able to fail ------------------------------------------------
TEST(FakeCudaApi, ReportsEveryBrokenRule) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  vgpu::GpuStream stream = api.create_stream();  // on GPU 0
  void* block = api.allocate(64);
  api.set_current_gpu(1);
  api.fill_bytes_async(block, 0, 64, stream);  // GPU 0's stream while GPU 1 is current
  api.set_current_gpu(0);
  api.release(block, 1);  // allocated on GPU 0
  api.release(block, 0);  // twice
  vgpu::GpuEvent event = api.create_event();
  api.wait_event(stream, event);  // never recorded
  api.synchronize_event(event);   // never recorded
  EXPECT_THROW(api.elapsed_ms(event, event), vgpu::CudaError);
  api.destroy_stream(stream);
  api.record_event(event, stream);  // after its stream was destroyed
  float outside[4] = {};
  api.set_current_gpu(0);
  vgpu::GpuStream other = api.create_stream();
  api.launch_add(outside, outside, 4, other, 0);  // host memory, no block
  const std::vector<std::string> broken = api.violations();
  const auto mentions = [&](const std::string& text) {
    return std::any_of(broken.begin(), broken.end(),
                       [&](const std::string& b) { return b.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(mentions("while GPU 1 is current")) << ::testing::PrintToString(broken);
  EXPECT_TRUE(mentions("of a block allocated on GPU 0"));
  EXPECT_TRUE(mentions("freed twice"));
  EXPECT_TRUE(mentions("wait_event of an event never recorded"));
  EXPECT_TRUE(mentions("synchronize_event of an event never recorded"));
  EXPECT_TRUE(mentions("elapsed_ms of an event never recorded"));
  EXPECT_TRUE(mentions("after it was destroyed"));
  EXPECT_TRUE(mentions("that no live block holds"));
  EXPECT_FALSE(nothing_left(api));  // `other` and the event are still alive
  api.destroy_stream(other);
  api.destroy_event(event);
  EXPECT_TRUE(nothing_left(api));
}

// ---- allocator, arena, streams ------------------------------------------------------------------
TEST(CudaPaths, ArenaAccountingOverTheCudaAllocatorIsExactAndBlocksAreZero) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  {
    FakeCudaDevices cards(api, {0, 1}, 1 << 20);
    Device& d1 = *cards.devices()[1];
    {
      // From the host thread, whose current GPU is 0: the allocator works on GPU 1 and gives
      // the thread its GPU back.
      Allocation a = d1.memory().allocate(1000, "a");
      Allocation b = d1.memory().allocate(24, "b");
      EXPECT_EQ(d1.memory().in_use(), 1024u);
      EXPECT_EQ(api.current_gpu(), 0);
      std::vector<float> host(250, -1.0f);
      vgpu::read_buffer(d1, std::span<const float>(a.as<float>(), 250), host);
      EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](float v) { return v == 0.0f; }))
          << "a block must be zeroed (the fake hands out 0xFF bytes)";
      b.reset();
      EXPECT_EQ(d1.memory().in_use(), 1000u);
      EXPECT_EQ(d1.memory().peak(), 1024u);
    }
    EXPECT_EQ(d1.memory().in_use(), 0u);
    EXPECT_GE(api.count("allocate gpu1"), 2);
    EXPECT_EQ(api.count("allocate gpu0"), 0);
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));  // every block freed, every stream destroyed
}

TEST(CudaPaths, ACardThatIsFullIsTheArenasGpuError) {
  FakeCudaApi::Options o;
  o.bytes_per_gpu = 4096;  // less than the device's limit: the card runs out first
  FakeCudaApi api(o);
  {
    FakeCudaDevices cards(api, {0}, 1 << 20);
    Device& d = *cards.devices()[0];
    Allocation a = d.memory().allocate(4000, "a");
    try {
      Allocation b = d.memory().allocate(1000, "gradients");
      FAIL() << "the fake card has 4096 bytes";
    } catch (const vgpu::OutOfMemoryError& e) {
      EXPECT_EQ(e.ran_out(), vgpu::MemoryRanOut::kGpu);
      EXPECT_FALSE(e.over_limit());
      EXPECT_EQ(d.memory().in_use(), 4000u);
    }
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

TEST(CudaPaths, AFailedZeroingGivesTheBlockBack) {
  FakeCudaApi api;
  {
    FakeCudaDevices cards(api, {0}, 1 << 20);
    api.fail_next("fill_bytes_async");
    EXPECT_THROW(cards.devices()[0]->memory().allocate(64, "a"), vgpu::CudaError);
    EXPECT_EQ(cards.devices()[0]->memory().in_use(), 0u);
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

TEST(CudaPaths, AnSmSplitTheDriverCannotMakeSaysWhyAndSharesTheSms) {
  FakeCudaApi api;
  {
    vgpu::CudaExecutionSet set = vgpu::make_cuda_executions(api, 0, 3, /*sm_split=*/true);
    ASSERT_EQ(set.devices.size(), 3u);
    EXPECT_NE(set.sm_note.find("an SM split is not available: the fake CUDA runtime has no green "
                               "contexts; the devices share all 132 SMs of GPU:0"),
              std::string::npos)
        << set.sm_note;
    EXPECT_NE(set.devices[0]->stream(), set.devices[1]->stream());
    EXPECT_FALSE(set.devices[0]->own_sms());
  }
  EXPECT_EQ(api.count("create_stream"), 3);
  EXPECT_EQ(api.count("destroy_stream"), 3);
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

// ---- the transport ------------------------------------------------------------------------------
// check_all_reduce_exact (tests/support/all_reduce_check.h): every element of every rank, bit for
// bit.
TEST(CudaPaths, EveryAlgorithmThroughTheCudaTransportOnLogicalGpusOfOneCard) {
  FakeCudaApi api;
  for (const int n : {1, 2, 3, 4, 8}) {
    FakeCudaDevices card(api, std::vector<int>(static_cast<std::size_t>(n), 0));
    for (const std::string_view name :
         {vgpu::kReduceToOneName, vgpu::kRingName, vgpu::kOneShotName}) {
      const auto algorithm = vgpu::make_all_reduce(name);
      for (const std::size_t count :
           {std::size_t{1}, std::size_t(n + 1), std::size_t(2 * n + 1), std::size_t{4099}}) {
        for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          check_all_reduce_exact(card.devices(), *algorithm, count,
                                 std::vector<std::size_t>(static_cast<std::size_t>(n), 0), op);
        }
      }
      // Misaligned buffers, as nccl-tests makes them.
      check_all_reduce_exact(card.devices(), *algorithm, 37,
                             std::vector<std::size_t>(static_cast<std::size_t>(n), 3),
                             ReduceOp::kSum);
    }
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

class Recorder : public vgpu::StepObserver {
 public:
  void on_step(const vgpu::CollectiveStep& step) override { steps.push_back(step); }
  std::vector<vgpu::CollectiveStep> steps;
};

TEST(CudaPaths, TheOneShotIsOneKernelOnRankZerosStreamAndTheStepsHaveEventTimes) {
  FakeCudaApi api;
  FakeCudaDevices card(api, {0, 0, 0, 0});
  const auto one_shot = vgpu::make_all_reduce(vgpu::kOneShotName);
  Recorder recorder;
  const int before = api.count("launch_one_shot");
  check_all_reduce_exact(card.devices(), *one_shot, 1001, {0, 0, 0, 0}, ReduceOp::kSum, &recorder);
  EXPECT_EQ(api.count("launch_one_shot") - before, 1);
  EXPECT_EQ(api.count("launch_one_shot gpu0 ranks=4 [0,1001)"), 1);
  ASSERT_EQ(recorder.steps.size(), 1u);
  // For each rank's slice, N*(N-1) flows of the data (every source into every other rank).
  EXPECT_EQ(recorder.steps[0].transfers.size(), 4u * 4u * 3u);
  for (const vgpu::Transfer& t : recorder.steps[0].transfers) EXPECT_LE(t.start, t.finish);

  const auto ring = vgpu::make_all_reduce(vgpu::kRingName);
  Recorder ring_steps;
  check_all_reduce_exact(card.devices(), *ring, 1001, {0, 0, 0, 0}, ReduceOp::kSum, &ring_steps);
  ASSERT_EQ(static_cast<int>(ring_steps.steps.size()), ring->num_steps(4));
  for (const vgpu::CollectiveStep& step : ring_steps.steps) {
    EXPECT_FALSE(step.transfers.empty());
    for (const vgpu::Transfer& t : step.transfers) {
      EXPECT_LE(t.start, t.finish);
      EXPECT_LE(t.finish, step.finish) << "a transfer cannot end after its step";
    }
  }
  EXPECT_TRUE(kept_cudas_rules(api));
}

TEST(CudaPaths, PhysicalGpusWithPeerAccessAddFromThePeersMemory) {
  FakeCudaApi::Options o;
  o.gpus = 3;
  FakeCudaApi api(o);
  {
    FakeCudaDevices cards(api, {0, 1, 2});
    for (const std::string_view name :
         {vgpu::kReduceToOneName, vgpu::kRingName, vgpu::kOneShotName}) {
      check_all_reduce_exact(cards.devices(), *vgpu::make_all_reduce(name), 1000, {0, 1, 2},
                             ReduceOp::kMean);
    }
    EXPECT_EQ(api.count("allocate_async"), 0) << "with peer access nothing is staged";
    EXPECT_GT(api.count("enable_peer_access"), 0);
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

TEST(CudaPaths, WithoutPeerAccessChunksAreStagedAndTheOneShotIsRefused) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  o.peer_access = false;
  FakeCudaApi api(o);
  {
    FakeCudaDevices cards(api, {0, 1});
    for (const std::string_view name : {vgpu::kReduceToOneName, vgpu::kRingName}) {
      check_all_reduce_exact(cards.devices(), *vgpu::make_all_reduce(name), 513, {0, 0},
                             ReduceOp::kSum);
    }
    EXPECT_GT(api.count("allocate_async"), 0);
    EXPECT_EQ(api.count("allocate_async"), api.count("release_async"));
    try {
      check_all_reduce_exact(cards.devices(), *vgpu::make_all_reduce(vgpu::kOneShotName), 8, {0, 0},
                             ReduceOp::kSum);
      FAIL() << "the one-shot cannot read a GPU it cannot reach";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cannot reach GPU 1's memory (no peer access)"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

// ---- NCCL and its fallback ----------------------------------------------------------------------
TEST(CudaPaths, NcclIsOneGroupOfEveryRankThenEveryStreamIsWaitedFor) {
  FakeCudaApi::Options o;
  o.gpus = 3;
  FakeCudaApi api(o);
  FakeNcclApi nccl(api);
  {
    FakeCudaDevices cards(api, {0, 1, 2});
    {
      const auto all_reduce = vgpu::make_nccl_all_reduce(cards.devices(), false, nccl);
      EXPECT_EQ(api.current_gpu(), 0) << "the caller's GPU is given back after ncclCommInitAll";
      EXPECT_EQ(nccl.live_comms(), 3);
      check_all_reduce_exact(cards.devices(), *all_reduce, 4099, {0, 1, 2}, ReduceOp::kSum);
      check_all_reduce_exact(cards.devices(), *all_reduce, 5, {1, 1, 1}, ReduceOp::kMean);
    }
    EXPECT_EQ(nccl.live_comms(), 0) << "every communicator destroyed";
    const std::vector<std::string> calls = nccl.calls();
    const std::vector<std::string> first_group(calls.begin() + 1, calls.begin() + 6);
    EXPECT_EQ(first_group, (std::vector<std::string>{"group_start", "all_reduce rank0 n=4099",
                                                     "all_reduce rank1 n=4099",
                                                     "all_reduce rank2 n=4099", "group_end"}));
  }
  EXPECT_TRUE(nccl.violations().empty()) << ::testing::PrintToString(nccl.violations());
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

// A pack that overlaps backward (PackFrame::communication_stream) is all-reduced on each device's
// communication stream: every algorithm's work goes there, none on the streams the compute uses,
// and the sums are exact.
TEST(CudaPaths, APackOnTheCommunicationStreamsRunsThereWithEveryAlgorithm) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  FakeNcclApi nccl(api);
  {
    FakeCudaDevices cards(api, {0, 1});
    const std::vector<Device*>& devices = cards.devices();
    std::set<std::string> compute, communication;
    for (Device* d : devices) {
      compute.insert("s" + std::to_string(api.stream_id(d->cuda_stream())));
      void* lane = d->communication_cuda_stream();
      EXPECT_EQ(d->communication_cuda_stream(), lane) << "made once";
      EXPECT_NE(lane, d->cuda_stream());
      communication.insert("s" + std::to_string(api.stream_id(lane)));
    }
    std::vector<std::unique_ptr<vgpu::AllReduce>> algorithms;
    for (const std::string_view name :
         {vgpu::kReduceToOneName, vgpu::kRingName, vgpu::kOneShotName}) {
      algorithms.push_back(vgpu::make_all_reduce(name));
    }
    algorithms.push_back(vgpu::make_nccl_all_reduce(devices, false, nccl));
    const std::size_t whole = 1000, offset = 600, count = 400;  // the last of two packs
    for (const auto& algorithm : algorithms) {
      SCOPED_TRACE(algorithm->name());
      const ExactInputs inputs = write_exact_inputs(devices, count, {0, 3});
      vgpu::PackFrame frame;
      frame.offset = offset;
      frame.whole = whole;
      frame.index = 1;
      frame.packs = 2;
      frame.communication_stream = true;
      const std::size_t from = api.stream_calls().size();
      vgpu::all_reduce(devices, inputs.buffers, *algorithm, ReduceOp::kSum, nullptr, frame);
      const std::vector<std::string> calls = api.stream_calls();
      int on_lanes = 0;
      for (std::size_t i = from; i < calls.size(); ++i) {
        const std::string stream = calls[i].substr(0, calls[i].find(' '));
        EXPECT_EQ(compute.count(stream), 0u) << calls[i] << ": on a compute stream";
        on_lanes += static_cast<int>(communication.count(stream));
      }
      EXPECT_GT(on_lanes, 0);
      expect_exact_sums(devices, inputs, ReduceOp::kSum);
    }
  }
  EXPECT_TRUE(nccl.violations().empty()) << ::testing::PrintToString(nccl.violations());
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

TEST(CudaPaths, NcclFailuresSayWhichCallAndStillCloseTheGroup) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  FakeNcclApi nccl(api);
  FakeCudaDevices cards(api, {0, 1});
  nccl.fail_init("ncclCommInitAll(comms, n, ordinals) failed: unhandled cuda error");
  try {
    vgpu::make_nccl_all_reduce(cards.devices(), false, nccl);
    FAIL() << "init must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ncclCommInitAll"), std::string::npos);
  }
  EXPECT_EQ(api.current_gpu(), 0) << "given back after a failed ncclCommInitAll too";

  FakeNcclApi second(api);
  second.fail_all_reduce_of_rank(1);
  const auto all_reduce = vgpu::make_nccl_all_reduce(cards.devices(), false, second);
  try {
    check_all_reduce_exact(cards.devices(), *all_reduce, 16, {0, 0}, ReduceOp::kSum);
    FAIL() << "rank 1's all-reduce must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the NCCL all-reduce of rank 1"), std::string::npos)
        << e.what();
  }
  const std::vector<std::string> calls = second.calls();
  EXPECT_EQ(calls.back(), "group_end") << "the group it opened is closed";
  EXPECT_TRUE(second.violations().empty()) << ::testing::PrintToString(second.violations());
}

// Without NCCL (not built, or logical GPUs sharing a card before NCCL 2.30), auto falls back to
// the ring, and the ring runs through the CUDA transport.
TEST(CudaPaths, WithoutNcclAutoFallsBackToTheRingAndItRuns) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  {
    FakeCudaDevices physical(api, {0, 1});
    const auto placements = vgpu::placements_of(physical.devices());
    const vgpu::AllReduceChoice with_nccl =
        vgpu::choose_all_reduce("auto", placements, vgpu::NcclRuntime{true, 22809});
    EXPECT_EQ(with_nccl.algorithm, vgpu::kNcclName);
    const vgpu::AllReduceChoice without =
        vgpu::choose_all_reduce("auto", placements, vgpu::NcclRuntime{});
    ASSERT_EQ(without.algorithm, vgpu::kRingName);
    check_all_reduce_exact(physical.devices(),
                           *vgpu::make_all_reduce(without.algorithm, physical.devices()), 1025,
                           {0, 0}, ReduceOp::kMean);

    FakeCudaDevices one_card(api, {0, 0});
    const vgpu::AllReduceChoice shared = vgpu::choose_all_reduce(
        "auto", vgpu::placements_of(one_card.devices()), vgpu::NcclRuntime{true, 22809});
    ASSERT_EQ(shared.algorithm, vgpu::kRingName);
    check_all_reduce_exact(one_card.devices(),
                           *vgpu::make_all_reduce(shared.algorithm, one_card.devices()), 1025,
                           {0, 0}, ReduceOp::kSum);
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

// ---- the memory-bandwidth measurement (measure_cuda_stream_bandwidth) -------------------------
// The positions in api.calls() of the calls starting with `name`.
std::vector<std::size_t> positions(const std::vector<std::string>& calls, const std::string& name) {
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].compare(0, name.size(), name) == 0) at.push_back(i);
  }
  return at;
}

TEST(CudaPaths, BandwidthEventsBracketEveryTimedKernelOfEachGpu) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  api.set_current_gpu(1);  // the caller's
  {
    FakeCudaDevices cards(api, {0, 0, 1}, 4 << 20);  // two logical GPUs on GPU 0, one on GPU 1
    const double bandwidth =
        vgpu::measure_cuda_stream_bandwidth(cards.devices(), 1 << 20, 3, /*add=*/false);
    EXPECT_TRUE(std::isfinite(bandwidth) && bandwidth > 0) << bandwidth;
    EXPECT_EQ(api.current_gpu(), 1);
    EXPECT_EQ(api.count("launch_add"), 0);
    const std::vector<std::string> calls = api.calls();
    // GPU 0: 2 devices x (1 warm-up + 3 timed) copies of 2^17 floats, then GPU 1: 1 x 4.
    const auto gpu0 = positions(calls, "launch_copy gpu0 n=131072");
    const auto gpu1 = positions(calls, "launch_copy gpu1 n=131072");
    ASSERT_EQ(gpu0.size(), 8u);
    ASSERT_EQ(gpu1.size(), 4u);
    const auto records = positions(calls, "record_event");
    const auto waits = positions(calls, "wait_event");
    // GPU 0: start, after the warm-up, before the timed kernels; the second stream waits for it;
    // its end joined to the first stream (a record and a wait) before the stop.
    ASSERT_EQ(records.size(), 5u);  // GPU 0: start, join, stop; GPU 1: start, stop
    ASSERT_EQ(waits.size(), 2u);
    EXPECT_LT(gpu0[1], records[0]);
    EXPECT_LT(records[0], waits[0]);
    EXPECT_LT(waits[0], gpu0[2]);
    EXPECT_LT(gpu0[7], records[1]);
    EXPECT_LT(records[1], waits[1]);
    EXPECT_LT(waits[1], records[2]);
    EXPECT_LT(records[2], gpu1[0]);
    EXPECT_LT(gpu1[0], records[3]);
    EXPECT_LT(records[3], gpu1[1]);
    EXPECT_LT(gpu1[3], records[4]);
    EXPECT_GT(vgpu::measure_cuda_stream_bandwidth(cards.devices(), 1 << 20, 1, /*add=*/true), 0);
    EXPECT_EQ(api.count("launch_add gpu0"), 4);  // 2 devices x (warm-up + 1)
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));  // every event destroyed, every block given back
}

TEST(CudaPaths, ABandwidthCallThatFailsLeavesNothingRunningOrAlive) {
  FakeCudaApi::Options o;
  o.gpus = 2;
  FakeCudaApi api(o);
  {
    FakeCudaDevices cards(api, {0, 1}, 4 << 20);
    api.fail_next("record_event");
    EXPECT_THROW(vgpu::measure_cuda_stream_bandwidth(cards.devices(), 1 << 20, 2, true),
                 vgpu::CudaError);
    EXPECT_EQ(api.current_gpu(), 0);
    EXPECT_EQ(api.count("launch_add gpu1"), 0);  // it stopped at GPU 0
    // Both devices' streams synchronized after the failure, before their blocks went back.
    const std::vector<std::string> calls = api.calls();
    const auto launched = positions(calls, "launch_add");
    const auto released = positions(calls, "release");
    ASSERT_FALSE(launched.empty());
    ASSERT_FALSE(released.empty());
    std::set<std::string> synchronized;
    for (std::size_t i = launched.back(); i < released.front(); ++i) {
      if (calls[i].rfind("synchronize_stream", 0) == 0) synchronized.insert(calls[i]);
    }
    EXPECT_EQ(synchronized.size(), 2u) << ::testing::PrintToString(calls);
    for (vgpu::Device* d : cards.devices()) EXPECT_EQ(d->memory().in_use(), 0u);
    std::vector<vgpu::Device*> mixed = cards.devices();
    FakeCudaApi other_api(o);
    FakeCudaDevices other(other_api, {0}, 1 << 20);
    mixed.push_back(other.devices().front());
    EXPECT_THROW(vgpu::measure_cuda_stream_bandwidth(mixed, 1 << 20, 1, true),
                 std::invalid_argument);
  }
  EXPECT_TRUE(kept_cudas_rules(api));
  EXPECT_TRUE(nothing_left(api));
}

}  // namespace
}  // namespace mirrorlab::testing
