// What a training step asks of the GPU, counted at the seam (virtualgpu/cuda/gpu_work_counts.h)
// while the whole mirrored step runs on logical GPUs of a fake card: the real CudaOps, transport
// and strategy, over the fake CUDA runtime and the fake model kernels, each wrapped in the
// counting layer the process's runtime is wrapped in. The numbers are pinned per phase: a host
// wait, an event made or a launch added to the step fails here, on every machine.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/mirrored_strategy.h"
#include "core/strategy/step_kernels.h"
#include "tests/support/cuda/counting_fake_card.h"

namespace mirrorlab::testing {
namespace {

using vgpu::difference;
using vgpu::GpuWork;
using vgpu::GpuWorkTable;
using vgpu::WorkPhase;

struct StepRig : CountingFakeCard {
  core::Dataset data = core::synthetic_dataset(256);
  std::vector<std::uint32_t> order = std::vector<std::uint32_t>(256);

  StepRig(int gpus, std::string all_reduce) : CountingFakeCard(gpus) {
    std::iota(order.begin(), order.end(), 0u);
    options.gpu_model = &model;
    options.all_reduce = std::move(all_reduce);
  }
  core::StrategyOptions options;
};

// The counts of one training step of `model` at 16 per replica, after two steps that made
// what a run makes once (events, scratch, the captured graph); the two steps measured must agree.
// `graphs`: the forward and backward as a captured CUDA graph (the default), or the uncaptured
// path the GUI steps through phase by phase.
GpuWorkTable one_step(int gpus, core::ModelKind model, const std::string& all_reduce = "ring",
                      bool graphs = false) {
  StepRig rig(gpus, all_reduce);
  rig.options.model = model;
  rig.options.cuda_graphs = graphs;
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  const std::size_t per_replica = 16;
  const core::GlobalBatch batch{
      &rig.data, std::span(rig.order).first(per_replica * static_cast<std::size_t>(gpus)),
      per_replica};
  for (int i = 0; i < 2; ++i) strategy.train_step(batch);
  const GpuWorkTable before = rig.counts.snapshot();
  strategy.train_step(batch);
  const GpuWorkTable middle = rig.counts.snapshot();
  strategy.train_step(batch);
  const GpuWorkTable after = rig.counts.snapshot();
  EXPECT_EQ(difference(middle, before), difference(after, middle))
      << "two steps asked different work of the GPU";
  EXPECT_TRUE(rig.fake.violations().empty()) << ::testing::PrintToString(rig.fake.violations());
  EXPECT_TRUE(rig.fake_model.violations().empty())
      << ::testing::PrintToString(rig.fake_model.violations());
  return difference(after, middle);
}

std::int64_t at(const GpuWorkTable& t, WorkPhase phase, GpuWork work) {
  return t[static_cast<int>(phase)][static_cast<int>(work)];
}

std::string describe(const GpuWorkTable& t) {
  std::string text;
  for (int p = 0; p < vgpu::kNumWorkPhases; ++p) {
    text += std::string("\n") + to_string(static_cast<WorkPhase>(p)) + ":";
    for (int w = 0; w < vgpu::kNumGpuWork; ++w) {
      if (t[p][w] != 0) {
        text += " " + std::to_string(t[p][w]) + " " + to_string(static_cast<GpuWork>(w)) + ",";
      }
    }
  }
  return text;
}

// The host waits for each replica's GPU twice a step: once after backward, for the loss's sums
// and the search for a NaN gradient (one read-back, which must come before the all-reduce so
// that a NaN is named where it appears), and once at the step's end. Nothing else waits: not
// the all-reduce, not the phase marks (anchored once a second, not once a step), and no step
// makes or destroys an event or a block of memory.
TEST(StepGpuWork, EachReplicaWaitsTwiceAStepAndMakesNothing) {
  for (int gpus : {1, 2, 4}) {
    for (core::ModelKind model : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
      const GpuWorkTable t = one_step(gpus, model);
      SCOPED_TRACE(std::to_string(gpus) + " GPUs, " + core::to_string(model) + describe(t));
      EXPECT_EQ(at(t, WorkPhase::kBackward, GpuWork::kHostWait), gpus);
      EXPECT_EQ(at(t, WorkPhase::kStepEnd, GpuWork::kHostWait), gpus);
      EXPECT_EQ(total(t, GpuWork::kHostWait), 2 * gpus);
      EXPECT_EQ(total(t, GpuWork::kEventMade), 0);
      EXPECT_EQ(total(t, GpuWork::kEventDestroyed), 0);
      // The loss's sums and the NaN search's answer; the weights' fingerprint where replicas
      // are compared (more than one).
      EXPECT_EQ(at(t, WorkPhase::kBackward, GpuWork::kCopyToHost), 2 * gpus);
      EXPECT_EQ(at(t, WorkPhase::kStepEnd, GpuWork::kCopyToHost), gpus > 1 ? gpus : 0);
    }
  }
}

// The phase marks' clock is tied to the host's once every 100 steps (a wait at the split), by
// the steps, not by the seconds: the counts of a step are the same on a slow machine (a
// sanitizer's build) as on a fast one.
TEST(StepGpuWork, TheMarksAnchorWaitsOnceEveryHundredSteps) {
  StepRig rig(1, "ring");
  rig.options.model = core::ModelKind::kMlp;
  core::MirroredStrategy strategy(rig.devices.devices(), rig.options);
  const core::GlobalBatch batch{&rig.data, std::span(rig.order).first(16), 16};
  strategy.train_step(batch);  // anchored here
  const GpuWorkTable before = rig.counts.snapshot();
  for (int i = 0; i < 99; ++i) strategy.train_step(batch);
  const GpuWorkTable middle = rig.counts.snapshot();
  EXPECT_EQ(at(difference(middle, before), WorkPhase::kSplit, GpuWork::kHostWait), 0);
  strategy.train_step(batch);  // the 101st: anchored again
  EXPECT_EQ(at(difference(rig.counts.snapshot(), middle), WorkPhase::kSplit, GpuWork::kHostWait),
            1);
}

// A step's counts as a test pins them, on the ring (what auto runs on logical GPUs).
struct Pinned {
  int gpus;
  core::ModelKind model;
  int kernels, blas, to_gpu, to_host, on_gpu, recorded, stream_waits;
};

GpuWorkTable expect_pinned(const Pinned& e, bool graphs) {
  const GpuWorkTable t = one_step(e.gpus, e.model, "ring", graphs);
  SCOPED_TRACE(std::to_string(e.gpus) + " GPUs, " + core::to_string(e.model) + describe(t));
  EXPECT_EQ(total(t, GpuWork::kKernel), e.kernels);
  EXPECT_EQ(total(t, GpuWork::kBlas), e.blas);
  EXPECT_EQ(total(t, GpuWork::kCopyToDevice), e.to_gpu);
  EXPECT_EQ(total(t, GpuWork::kCopyToHost), e.to_host);
  EXPECT_EQ(total(t, GpuWork::kCopyOnDevice), e.on_gpu);
  EXPECT_EQ(total(t, GpuWork::kEventRecorded), e.recorded);
  EXPECT_EQ(total(t, GpuWork::kStreamWait), e.stream_waits);
  EXPECT_EQ(total(t, GpuWork::kGraphLaunch), graphs ? e.gpus : 0);
  return t;
}

// Every count of a step, pinned, uncaptured (the path the GUI steps through phase by phase). A
// launch, a copy or a stream's wait added to the step shows here.
TEST(StepGpuWork, TheWholeStepIsPinned) {
  const Pinned cases[] = {
      {1, core::ModelKind::kCnn, 15, 11, 2, 2, 2, 9, 0},
      {2, core::ModelKind::kCnn, 32, 22, 4, 6, 6, 22, 4},
      {4, core::ModelKind::kCnn, 72, 44, 8, 12, 20, 60, 44},
      {1, core::ModelKind::kMlp, 12, 12, 2, 2, 1, 9, 0},
      {2, core::ModelKind::kMlp, 26, 24, 4, 6, 4, 22, 4},
      {4, core::ModelKind::kMlp, 60, 48, 8, 12, 16, 60, 44},
  };
  for (const Pinned& e : cases) expect_pinned(e, /*graphs=*/false);
}

// With the forward and backward captured as a graph, each replica's step is one graph launch (in
// the forward's count) and the few calls around it: its shard copied in, the all-reduce, the
// update, the same two host waits, no cuBLAS call and no event made or destroyed.
TEST(StepGpuWork, ACapturedStepIsOneGraphLaunchAReplica) {
  const Pinned cases[] = {
      {1, core::ModelKind::kCnn, 1, 0, 2, 0, 0, 5, 0},
      {2, core::ModelKind::kCnn, 4, 0, 4, 2, 2, 14, 4},
      {4, core::ModelKind::kCnn, 16, 0, 8, 4, 12, 44, 44},
      {1, core::ModelKind::kMlp, 1, 0, 2, 0, 0, 5, 0},
      {2, core::ModelKind::kMlp, 4, 0, 4, 2, 2, 14, 4},
      {4, core::ModelKind::kMlp, 16, 0, 8, 4, 12, 44, 44},
  };
  for (const Pinned& e : cases) {
    const GpuWorkTable t = expect_pinned(e, /*graphs=*/true);
    EXPECT_EQ(at(t, WorkPhase::kForward, GpuWork::kGraphLaunch), e.gpus);
    EXPECT_EQ(total(t, GpuWork::kHostWait), 2 * e.gpus);
    EXPECT_EQ(total(t, GpuWork::kEventMade), 0);
    EXPECT_EQ(total(t, GpuWork::kEventDestroyed), 0);
  }
  // The issue's measure: every call the host makes to the GPU in a CNN step on 2 logical GPUs.
  const auto calls = [](const GpuWorkTable& t) {
    std::int64_t sum = 0;
    for (int w = 0; w < vgpu::kNumGpuWork; ++w) sum += total(t, static_cast<GpuWork>(w));
    return sum;
  };
  const std::int64_t uncaptured = calls(one_step(2, core::ModelKind::kCnn, "ring", false));
  const std::int64_t captured = calls(one_step(2, core::ModelKind::kCnn, "ring", true));
  EXPECT_LE(2 * captured, uncaptured)
      << captured << " calls captured, " << uncaptured << " uncaptured";
}

// No algorithm's all-reduce makes the host wait or makes an event: the streams wait for each
// other on events the devices made once.
TEST(StepGpuWork, NoAllReduceWaitsForTheHost) {
  for (const char* algorithm : {"ring", "reduce-to-one", "one-shot"}) {
    for (int gpus : {2, 4}) {
      const GpuWorkTable t = one_step(gpus, core::ModelKind::kMlp, algorithm);
      SCOPED_TRACE(std::string(algorithm) + " on " + std::to_string(gpus) + " GPUs" + describe(t));
      EXPECT_EQ(at(t, WorkPhase::kAllReduce, GpuWork::kHostWait), 0);
      EXPECT_EQ(at(t, WorkPhase::kAllReduce, GpuWork::kEventMade), 0);
      EXPECT_GT(at(t, WorkPhase::kAllReduce, GpuWork::kStreamWait), 0);
    }
  }
}

// The counting itself: a call counts under the calling thread's phase, and a scope puts the
// one before it back.
TEST(GpuWorkCounts, CountsUnderTheThreadsPhase) {
  vgpu::GpuWorkCounts counts;
  counts.add(GpuWork::kKernel);
  {
    const vgpu::WorkPhaseScope outer(WorkPhase::kForward);
    counts.add(GpuWork::kKernel);
    {
      const vgpu::WorkPhaseScope inner(WorkPhase::kAllReduce);
      counts.add(GpuWork::kHostWait);
    }
    counts.add(GpuWork::kBlas);
  }
  const GpuWorkTable t = counts.snapshot();
  EXPECT_EQ(at(t, WorkPhase::kOther, GpuWork::kKernel), 1);
  EXPECT_EQ(at(t, WorkPhase::kForward, GpuWork::kKernel), 1);
  EXPECT_EQ(at(t, WorkPhase::kForward, GpuWork::kBlas), 1);
  EXPECT_EQ(at(t, WorkPhase::kAllReduce, GpuWork::kHostWait), 1);
  EXPECT_EQ(total(t, GpuWork::kKernel), 2);
  // The table as train prints it, per step: a row per kind of work, a column per phase of a
  // step and their total, within a terminal of 80 columns.
  const std::string text = vgpu::format_gpu_work(t, 2.0);
  std::istringstream lines(text);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
    rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 1u + vgpu::kNumGpuWork) << text;
  EXPECT_EQ(rows[0],
            "per step            split forward backward all-reduce update step end the step");
  // 1 kernel outside a step (not shown), 1 in forward: 0.5 a step, under forward and the step.
  EXPECT_EQ(rows[1],
            "kernels                 0     0.5        0          0      0        0      0.5");
  EXPECT_EQ(rows[3].rfind("host waits", 0), 0u) << rows[3];
  EXPECT_EQ(text.find("other"), std::string::npos) << text;
  EXPECT_NE(vgpu::format_gpu_work(t, 400.0).find("<0.1"), std::string::npos)
      << "a count made once in 400 steps reads as none";
}

// The trace carries the counts as a metadata event of its process, its args the JSON given.
TEST(GpuWorkCounts, TheTraceCarriesThemAsAMetadataEvent) {
  core::TraceProcess process{"worker 0", {"/gpu:0"}, {}, R"({"forward":{"kernels":14}})"};
  const std::string trace = core::chrome_trace({process});
  EXPECT_NE(trace.find(R"("name":"gpu_work_per_step","pid":1,"args":{"forward":{"kernels":14}})"),
            std::string::npos)
      << trace;
  process.gpu_work.clear();
  EXPECT_EQ(core::chrome_trace({process}).find("gpu_work_per_step"), std::string::npos);
}

}  // namespace
}  // namespace mirrorlab::testing

namespace mirrorlab::testing {
namespace {

// The list of a step's kernels the timing model prices (core/strategy/step_kernels.h) is what the
// backend launches: per phase, as many own kernels, cuBLAS calls and copies on the device as the
// fake card counted in a step of one replica (the shard's copy and the all-reduce are priced
// apart; the update's phase holds the optimizer).
TEST(StepGpuWork, TheTimingModelsKernelListIsWhatTheBackendLaunches) {
  for (core::ModelKind model : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
    const GpuWorkTable t = one_step(1, model);
    const std::vector<timing::KernelWork> list = core::step_kernels(model, {}, 16);
    SCOPED_TRACE(std::string(core::to_string(model)) + describe(t));
    const auto listed = [&](const char* part, timing::LaunchKind kind) {
      std::int64_t n = 0;
      for (const timing::KernelWork& k : list) n += k.part == part && k.kind == kind;
      return n;
    };
    for (const auto& [part, phase] :
         {std::pair{"forward", WorkPhase::kForward}, std::pair{"backward", WorkPhase::kBackward},
          std::pair{"update", WorkPhase::kUpdate}}) {
      SCOPED_TRACE(part);
      EXPECT_EQ(listed(part, timing::LaunchKind::kKernel), at(t, phase, GpuWork::kKernel));
      EXPECT_EQ(listed(part, timing::LaunchKind::kLibrary), at(t, phase, GpuWork::kBlas));
      EXPECT_EQ(listed(part, timing::LaunchKind::kCopy), at(t, phase, GpuWork::kCopyOnDevice));
    }
  }
}

}  // namespace
}  // namespace mirrorlab::testing
