// A training step's forward and backward captured once as a CUDA graph per replica and launched
// in the steps after (StrategyOptions::cuda_graphs), run on logical GPUs of the fake card: the
// real CudaOps and strategy, over the fake runtime, which records a capture's work and runs it
// at each launch, and refuses what CUDA refuses in a capture (a host wait, an allocation) and a
// launch on memory given back since.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_gpu_model_api.h"

namespace mirrorlab::testing {
namespace {

struct GraphRig {
  FakeCudaApi fake;
  FakeGpuModelApi model{fake};
  FakeCudaDevices devices;
  core::Dataset data = core::synthetic_dataset(256);
  std::vector<std::uint32_t> order = std::vector<std::uint32_t>(256);
  core::StrategyOptions options;

  GraphRig(int gpus, bool graphs, core::ModelKind kind) : devices(fake, std::vector<int>(gpus, 0)) {
    std::iota(order.begin(), order.end(), 0u);
    options.gpu_model = &model;
    options.model = kind;
    options.cuda_graphs = graphs;
    options.all_reduce = "ring";
  }
  core::GlobalBatch batch(std::size_t begin, std::size_t count, std::size_t per_replica) const {
    return core::GlobalBatch{&data, std::span(order).subspan(begin, count), per_replica};
  }
  void expect_clean() const {
    EXPECT_TRUE(fake.violations().empty()) << ::testing::PrintToString(fake.violations());
    EXPECT_TRUE(model.violations().empty()) << ::testing::PrintToString(model.violations());
  }
};

// What a run ends with: every replica's weights and each step's loss sum.
struct RunResult {
  std::vector<std::vector<float>> weights;
  std::vector<double> losses;
  int graphs_launched = 0;
  bool captured = false;
};

// Five steps of 16 a replica, an evaluation at 32 a replica (its larger batch regrows the
// activations: memory the graph used is given back), three more steps, then an uneven last
// batch (a shard size of its own, run uncaptured) and two full steps again.
RunResult run(int gpus, bool graphs, core::ModelKind kind, const std::string& optimizer = "sgd") {
  GraphRig rig(gpus, graphs, kind);
  rig.options.optimizer.kind = core::parse_optimizer_kind(optimizer);
  rig.options.optimizer.momentum = 0.9f;  // SGD with its velocity: state the update carries
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  const std::size_t per = 16, global = per * static_cast<std::size_t>(gpus);
  RunResult result;
  std::size_t at = 0;
  const auto step = [&](std::size_t count) {
    result.losses.push_back(strategy.train_step(rig.batch(at % 128, count, per)).loss_sum);
    at += count;
  };
  for (int i = 0; i < 5; ++i) step(global);
  strategy.evaluate(rig.data, 2 * per);
  for (int i = 0; i < 3; ++i) step(global);
  step(global - 3);
  for (int i = 0; i < 2; ++i) step(global);
  for (int r = 0; r < gpus; ++r) {
    result.weights.push_back(strategy.replica(r).model().params_to_host());
    EXPECT_EQ(strategy.replica(r).graphs_off(), "");
  }
  result.captured = strategy.replica(0).step_captured();
  result.graphs_launched = rig.fake.count("launch_graph");
  rig.expect_clean();
  return result;
}

TEST(StepGraphs, CapturedStepsGiveTheSameWeightsBitForBit) {
  struct Case {
    int gpus;
    core::ModelKind kind;
    const char* optimizer;
  };
  const Case cases[] = {{1, core::ModelKind::kCnn, "sgd"},
                        {2, core::ModelKind::kCnn, "adam"},
                        {2, core::ModelKind::kMlp, "sgd"},
                        {4, core::ModelKind::kMlp, "adam"},
                        {4, core::ModelKind::kCnn, "sgd"}};
  for (const auto& [gpus, kind, optimizer] : cases) {
    {
      {
        SCOPED_TRACE(std::to_string(gpus) + " GPUs, " + core::to_string(kind) + ", " + optimizer);
        const RunResult plain = run(gpus, false, kind, optimizer);
        const RunResult captured = run(gpus, true, kind, optimizer);
        EXPECT_EQ(plain.graphs_launched, 0);
        EXPECT_FALSE(plain.captured);
        EXPECT_EQ(captured.losses, plain.losses);
        ASSERT_EQ(captured.weights.size(), plain.weights.size());
        for (std::size_t r = 0; r < plain.weights.size(); ++r) {
          EXPECT_TRUE(captured.weights[r] == plain.weights[r]) << "replica " << r;
        }
        // Per replica: captured at step 2 (launched once), launched at 3-5; after the
        // evaluation moved memory the graph is stale: step 6 uncaptured, captured again at 7,
        // launched at 8; the uneven step 9 uncaptured; step 10 seen again, captured at 11.
        // A replica whose shard of the uneven batch is still 16 (3 of 4 when 61 examples go 4
        // ways) has the same graph for it, and launches it at 9 and 10 too.
        int expected = 0;
        for (const core::Shard& shard : core::split_global_batch(16 * gpus - 3, gpus, 16)) {
          expected += shard.count == 16 ? 9 : 7;
        }
        EXPECT_TRUE(captured.captured);
        EXPECT_EQ(captured.graphs_launched, expected);
      }
    }
  }
}

// A step the window follows phase by phase (a listener that needs the boundaries) runs
// uncaptured: the graph would pass every boundary at once.
TEST(StepGraphs, AStepFollowedAtItsBoundariesIsNotCaptured) {
  struct Boundaries : core::StepListener {
    std::atomic<int> reached{0};  // told on each replica's own thread
    core::StepNeeds begin_step(const core::StepStart&) override {
      core::StepNeeds needs;
      needs.boundaries = true;
      return needs;
    }
    void on_replica_reached(core::Replica&, core::StepBoundary) override { ++reached; }
  } listener;
  GraphRig rig(2, true, core::ModelKind::kMlp);
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  strategy.add_listener(&listener);
  for (int i = 0; i < 4; ++i) strategy.train_step(rig.batch(0, 32, 16));
  EXPECT_EQ(rig.fake.count("begin_capture"), 0);
  EXPECT_EQ(rig.fake.count("launch_graph"), 0);
  EXPECT_EQ(listener.reached.load(), 4 * 2 * 4);  // split, forward, backward, update, per replica
  rig.expect_clean();
}

// Where CUDA refuses the capture, the replica's steps run uncaptured, the same numbers, and
// it says why.
TEST(StepGraphs, ARefusedCaptureRunsTheStepUncapturedAndSaysWhy) {
  GraphRig rig(2, true, core::ModelKind::kMlp);
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  rig.fake.fail_next("begin_capture");
  for (int i = 0; i < 4; ++i) strategy.train_step(rig.batch(0, 32, 16));
  const std::string off0 = strategy.replica(0).graphs_off();
  const std::string off1 = strategy.replica(1).graphs_off();
  EXPECT_NE(off0 + off1, "");
  EXPECT_NE((off0 + off1).find("could not capture"), std::string::npos) << off0 << off1;
  // The replica that was refused runs uncaptured; the other captured its step.
  EXPECT_NE(strategy.replica(0).step_captured(), strategy.replica(1).step_captured());
  GraphRig plain_rig(2, false, core::ModelKind::kMlp);
  core::MirroredStrategy plain(plain_rig.devices.devices(), plain_rig.options);
  for (int i = 0; i < 4; ++i) plain.train_step(plain_rig.batch(0, 32, 16));
  EXPECT_TRUE(strategy.replica(0).model().params_to_host() ==
              plain.replica(0).model().params_to_host());
  rig.expect_clean();
}

// The fake refuses what CUDA refuses: a host wait inside a capture, and a graph launched on a
// block given back since it was captured.
TEST(StepGraphs, TheFakeRefusesAWaitInACaptureAndALaunchOnFreedMemory) {
  FakeCudaApi fake;
  fake.set_current_gpu(0);
  vgpu::GpuStream stream = fake.create_stream();
  void* block = fake.allocate(64);
  void* other = fake.allocate(64);
  fake.begin_capture(stream);
  fake.copy_async(block, other, 64, vgpu::CopyKind::kDeviceToDevice, stream);
  fake.synchronize_stream(stream);
  ASSERT_EQ(fake.violations().size(), 1u);
  EXPECT_NE(fake.violations()[0].find("synchronize_stream while this thread captures"),
            std::string::npos)
      << fake.violations()[0];
  vgpu::GpuGraph graph = fake.end_capture(stream);
  fake.launch_graph(graph, stream);
  EXPECT_EQ(fake.violations().size(), 1u);
  fake.release(other, 0);
  fake.launch_graph(graph, stream);
  ASSERT_EQ(fake.violations().size(), 2u);
  EXPECT_NE(fake.violations()[1].find("launch_graph: copy_async"), std::string::npos)
      << fake.violations()[1];
  fake.destroy_graph(graph);
  fake.release(block, 0);
  fake.destroy_stream(stream);
  EXPECT_TRUE(fake.leaks().empty()) << ::testing::PrintToString(fake.leaks());
}

// The captured work runs only at the launches, each launch all of it again: a capture of one
// doubling leaves the value as it was; two launches make it four times that.
TEST(StepGraphs, TheFakeRunsACapturesWorkAtEachLaunchOnly) {
  FakeCudaApi fake;
  fake.set_current_gpu(0);
  vgpu::GpuStream stream = fake.create_stream();
  auto* x = static_cast<float*>(fake.allocate(sizeof(float)));
  auto* host = static_cast<float*>(fake.allocate_pinned(sizeof(float)));
  *host = 1.5f;
  fake.copy_async(x, host, sizeof(float), vgpu::CopyKind::kHostToDevice, stream);
  fake.begin_capture(stream);
  fake.launch_scale(x, 1, 2.0f, stream, 0);
  vgpu::GpuGraph graph = fake.end_capture(stream);
  EXPECT_EQ(*x, 1.5f);
  fake.launch_graph(graph, stream);
  EXPECT_EQ(*x, 3.0f);
  fake.launch_graph(graph, stream);
  EXPECT_EQ(*x, 6.0f);
  EXPECT_TRUE(fake.violations().empty()) << ::testing::PrintToString(fake.violations());
  fake.destroy_graph(graph);
  fake.destroy_stream(stream);
  fake.release_pinned(host);
  fake.release(x, 0);
  EXPECT_TRUE(fake.leaks().empty()) << ::testing::PrintToString(fake.leaks());
}

}  // namespace
}  // namespace mirrorlab::testing
