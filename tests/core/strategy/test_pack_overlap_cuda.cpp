// Packs that overlap backward on CUDA devices (PackOptions::overlap), run on logical GPUs of the
// fake card: the real CudaOps, strategy and CUDA transport over the fake runtime and the fake
// model kernels. Each replica's communication lane queues its packs' all-reduces on the device's
// communication stream, which waits on the GPU for each pack's gradients; the update waits there
// for the sums. The fake runs work as it is queued, so the order the streams keep is checked from
// what each was given; the weights against packs after backward, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/cuda/counting_fake_card.h"

namespace mirrorlab::testing {
namespace {

using vgpu::GpuWork;
using vgpu::GpuWorkTable;
using vgpu::WorkPhase;

struct OverlapRig : CountingFakeCard {
  core::Dataset data = core::synthetic_dataset(256);
  std::vector<std::uint32_t> order = std::vector<std::uint32_t>(256);
  core::StrategyOptions options;

  // The MLP in 3 packs (the last layer, dense_1, dense), each started as backward writes it.
  OverlapRig(int gpus, const std::string& all_reduce, bool overlap, core::ModelKind kind)
      : CountingFakeCard(gpus) {
    std::iota(order.begin(), order.end(), 0u);
    options.gpu_model = &model;
    options.model = kind;
    options.all_reduce = all_reduce;
    options.packs.bytes_per_pack = 4096;
    options.packs.overlap = overlap;
  }
  core::GlobalBatch batch(std::size_t begin, std::size_t count, std::size_t per_replica) const {
    return core::GlobalBatch{&data, std::span(order).subspan(begin, count), per_replica};
  }
  std::string stream(void* s) const { return "s" + std::to_string(fake.stream_id(s)); }
  void expect_clean() const {
    EXPECT_TRUE(fake.violations().empty()) << ::testing::PrintToString(fake.violations());
    EXPECT_TRUE(fake_model.violations().empty())
        << ::testing::PrintToString(fake_model.violations());
  }
};

// One line of FakeCudaApi::stream_calls(): "s3 record_event 7".
struct StreamCall {
  std::string stream, what, event;  // event: the number after record_event / wait_event
};

StreamCall parse(const std::string& line) {
  StreamCall c;
  const std::size_t space = line.find(' ');
  c.stream = line.substr(0, space);
  c.what = line.substr(space + 1);
  for (const char* kind : {"record_event ", "wait_event "}) {
    if (c.what.rfind(kind, 0) == 0) {
      c.event = c.what.substr(std::strlen(kind));
      c.what = std::string(kind, std::strlen(kind) - 1);
    }
  }
  return c;
}

// What one replica's streams did in a step, read in the order the host queued it.
struct LaneOrder {
  int forks = 0;             // the communication stream waited for an event of the compute stream
  int joins = 0;             // the compute stream waited for an event of the communication stream
  int lane_work = 0;         // collective work on the communication stream
  int work_before_fork = 0;  // of it, queued before the lane waited for any gradients
  int work_after_join = 0;   // queued after the event the update waits for
  int updates_before_join = 0;    // the optimizer's update queued before its wait for the sums
  int updates_after_join = 0;     // ... and after it
  int collective_on_compute = 0;  // a transfer's kernel or copy on the compute stream
};

LaneOrder lane_order(const std::vector<std::string>& lines, std::size_t from,
                     const std::string& compute, const std::string& lane) {
  LaneOrder o;
  std::map<std::string, std::string> recorded_on;  // event -> the stream it was last on
  std::map<std::string, std::size_t> recorded_at;  // event -> where
  std::size_t join_recorded_at = lines.size();     // the lane's event the update waited for
  bool forked = false, joined = false;
  std::vector<std::size_t> lane_work_at;
  for (std::size_t i = from; i < lines.size(); ++i) {
    const StreamCall c = parse(lines[i]);
    if (c.what == "record_event") {
      recorded_on[c.event] = c.stream;
      recorded_at[c.event] = i;
      continue;
    }
    if (c.stream == lane) {
      if (c.what == "wait_event") {
        if (recorded_on[c.event] == compute) {
          ++o.forks;
          forked = true;
        }
        continue;
      }
      ++o.lane_work;
      lane_work_at.push_back(i);
      if (!forked) ++o.work_before_fork;
    } else if (c.stream == compute) {
      if (c.what == "wait_event" && recorded_on[c.event] == lane) {
        ++o.joins;
        joined = true;
        join_recorded_at = recorded_at[c.event];
      } else if (c.what.size() > 7 && c.what.compare(c.what.size() - 7, 7, "_update") == 0) {
        ++(joined ? o.updates_after_join : o.updates_before_join);
      } else if (c.what == "launch_add" || c.what == "launch_copy" || c.what == "copy_peer_async" ||
                 c.what == "launch_one_shot") {
        ++o.collective_on_compute;
      }
    }
  }
  for (std::size_t at : lane_work_at) o.work_after_join += at > join_recorded_at;
  return o;
}

// The order the issue asks for, on every algorithm the strategy runs on logical GPUs: each pack's
// all-reduce queued on the communication stream after that stream waited for the compute stream
// (once a pack), none on the compute stream, and the update after the compute stream waited for
// an event the lane recorded after its last pack.
TEST(PackOverlapOnCuda, EachPackWaitsForItsGradientsOnTheGpuAndTheUpdateForTheSums) {
  for (const char* algorithm : {"ring", "reduce-to-one", "one-shot"}) {
    SCOPED_TRACE(algorithm);
    OverlapRig rig(2, algorithm, true, core::ModelKind::kMlp);
    core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
    ASSERT_EQ(strategy.packs().size(), 3u);
    for (int r = 0; r < 2; ++r) ASSERT_NE(strategy.replica(r).communication_lane(), nullptr);
    for (int i = 0; i < 2; ++i) strategy.train_step(rig.batch(32 * i, 32, 16));
    const std::size_t from = rig.fake.stream_calls().size();
    strategy.train_step(rig.batch(64, 32, 16));
    const std::vector<std::string> lines = rig.fake.stream_calls();
    int lane_work = 0;  // the one-shot's one kernel is on replica 0's lane
    for (int r = 0; r < 2; ++r) {
      SCOPED_TRACE("replica " + std::to_string(r));
      vgpu::Device& d = strategy.replica(r).device();
      const LaneOrder o = lane_order(lines, from, rig.stream(d.cuda_stream()),
                                     rig.stream(d.communication_cuda_stream()));
      EXPECT_EQ(o.forks, 3) << "one wait for the gradients a pack";
      EXPECT_EQ(o.joins, 1);
      lane_work += o.lane_work;
      EXPECT_EQ(o.work_before_fork, 0);
      EXPECT_EQ(o.work_after_join, 0) << "a pack's work after the event the update waited for";
      EXPECT_EQ(o.updates_before_join, 0);
      EXPECT_EQ(o.updates_after_join, 1);
      EXPECT_EQ(o.collective_on_compute, 0);
    }
    EXPECT_GT(lane_work, 0);
    // The lane's phases on the Timeline come from the communication stream's own events.
    rig.expect_clean();
  }
}

// Without overlap (or with one pack) nothing uses a communication stream: the packs follow
// backward on the compute stream, as before.
TEST(PackOverlapOnCuda, WithoutOverlapThePacksFollowBackwardOnTheComputeStream) {
  OverlapRig rig(2, "ring", false, core::ModelKind::kMlp);
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  EXPECT_EQ(strategy.replica(0).communication_lane(), nullptr);
  EXPECT_EQ(strategy.replica(0).graphs_off(), "");
  const int streams = rig.fake.count("create_stream");
  strategy.train_step(rig.batch(0, 32, 16));
  EXPECT_EQ(rig.fake.count("create_stream"), streams) << "a communication stream was made";
  rig.expect_clean();
}

// The work a step asks of the GPU with overlapping packs, per replica: the host waits for the
// loss before backward (a NaN loss is named as the loss) and for each pack's search for a NaN
// before its all-reduce (no pack is summed before its own gradients are known finite), then once
// at the step's end; the update waits on the GPU once; no event is made or destroyed in a step.
TEST(PackOverlapOnCuda, AStepWaitsOnTheHostOnceAPackAndMakesNothing) {
  for (int gpus : {2, 4}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs");
    OverlapRig rig(gpus, "ring", true, core::ModelKind::kMlp);
    core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
    const std::size_t global = 16 * static_cast<std::size_t>(gpus);
    for (int i = 0; i < 2; ++i) strategy.train_step(rig.batch(0, global, 16));
    const GpuWorkTable before = rig.counts.snapshot();
    strategy.train_step(rig.batch(0, global, 16));
    const GpuWorkTable t = vgpu::difference(rig.counts.snapshot(), before);
    const auto at = [&](WorkPhase p, GpuWork w) {
      return t[static_cast<int>(p)][static_cast<int>(w)];
    };
    EXPECT_EQ(at(WorkPhase::kBackward, GpuWork::kHostWait), gpus * (1 + 3));
    EXPECT_EQ(at(WorkPhase::kStepEnd, GpuWork::kHostWait), gpus);
    EXPECT_EQ(total(t, GpuWork::kHostWait), gpus * (1 + 3 + 1));
    EXPECT_EQ(at(WorkPhase::kAllReduce, GpuWork::kHostWait), 0);
    EXPECT_EQ(at(WorkPhase::kUpdate, GpuWork::kStreamWait), gpus);
    EXPECT_EQ(total(t, GpuWork::kEventMade), 0);
    EXPECT_EQ(total(t, GpuWork::kEventDestroyed), 0);
    // Backward launched kernel by kernel: the host starts the packs as it goes.
    EXPECT_EQ(total(t, GpuWork::kGraphLaunch), 0);
    EXPECT_NE(strategy.replica(0).graphs_off().find("overlap"), std::string::npos);
    rig.expect_clean();
  }
}

std::vector<std::vector<float>> weights_after(int gpus, const std::string& algorithm, bool overlap,
                                              std::size_t bytes_per_pack, core::ModelKind kind) {
  OverlapRig rig(gpus, algorithm, overlap, kind);
  rig.options.packs.bytes_per_pack = bytes_per_pack;
  rig.options.optimizer.momentum = 0.9f;
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  const std::size_t global = 8 * static_cast<std::size_t>(gpus);
  for (int i = 0; i < 3; ++i) strategy.train_step(rig.batch(global * i, global, 8));
  strategy.train_step(rig.batch(0, global - 3, 8));  // an uneven last batch
  std::vector<std::vector<float>> weights;
  for (int r = 0; r < gpus; ++r) weights.push_back(strategy.replica(r).model().params_to_host());
  rig.expect_clean();
  return weights;
}

// Any packs, with or without overlap, give the weights of one buffer bit for bit (every element
// summed in the same rank order), on every algorithm of logical GPUs, the replicas in sync.
TEST(PackOverlapOnCuda, TheWeightsAreThoseOfOneBufferBitForBit) {
  for (const core::ModelKind kind : {core::ModelKind::kMlp, core::ModelKind::kCnn}) {
    for (const char* algorithm : {"ring", "reduce-to-one", "one-shot"}) {
      for (int gpus : {2, 3}) {
        SCOPED_TRACE(std::string(core::to_string(kind)) + ", " + algorithm + ", " +
                     std::to_string(gpus) + " GPUs");
        const auto one = weights_after(gpus, algorithm, false, 0, kind);
        const auto after = weights_after(gpus, algorithm, false, 4096, kind);
        const auto overlapped = weights_after(gpus, algorithm, true, 4096, kind);
        for (int r = 0; r < gpus; ++r) {
          const auto& w = one[static_cast<std::size_t>(r)];
          ASSERT_EQ(w.size(), overlapped[static_cast<std::size_t>(r)].size());
          EXPECT_EQ(std::memcmp(w.data(), after[static_cast<std::size_t>(r)].data(),
                                w.size() * sizeof(float)),
                    0)
              << "replica " << r << ": packs after backward";
          EXPECT_EQ(std::memcmp(w.data(), overlapped[static_cast<std::size_t>(r)].data(),
                                w.size() * sizeof(float)),
                    0)
              << "replica " << r << ": packs overlapping backward";
          EXPECT_EQ(std::memcmp(w.data(), one[0].data(), w.size() * sizeof(float)), 0)
              << "replica " << r << " out of sync";
        }
      }
    }
  }
}

// A replica whose loss is NaN stops the step before any of its packs is sent, while the others'
// packs are on their lanes: they are released, nobody updates, and the strategy trains on after.
TEST(PackOverlapOnCuda, ANanLossStopsTheStepWithThePacksInFlightAndNobodyUpdates) {
  OverlapRig rig(3, "ring", true, core::ModelKind::kMlp);
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  const core::GlobalBatch batch = rig.batch(0, 24, 8);
  strategy.train_step(batch);
  std::vector<std::uint64_t> before;
  for (int r = 0; r < 3; ++r) before.push_back(strategy.replica(r).model().params_fingerprint());
  // The last layer's bias on replica 1 (the fake card's memory is the host's): its loss is NaN.
  core::Model& model = strategy.replica(1).model();
  float* bias = &model.params()[model.num_params() - 1];
  const float saved = *bias;
  *bias = std::numeric_limits<float>::quiet_NaN();
  try {
    strategy.train_step(batch);
    FAIL() << "the NaN loss was not caught";
  } catch (const core::DivergedError& e) {
    EXPECT_EQ(e.where().replica, 1);
    EXPECT_TRUE(e.where().in_loss()) << e.what();
  }
  for (int r : {0, 2}) {
    EXPECT_EQ(strategy.replica(r).model().params_fingerprint(), before[static_cast<std::size_t>(r)])
        << "replica " << r << " took the step";
  }
  *bias = saved;
  strategy.train_step(batch);
  EXPECT_EQ(strategy.steps_done(), 2);
  rig.expect_clean();
}

}  // namespace
}  // namespace mirrorlab::testing
