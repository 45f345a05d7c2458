// The course: every lesson of lessons/ plays with every check passing, and each lesson's checks
// fail when what the lesson is about is broken (the all-reduce skipped, the batch split otherwise,
// ...). These are about the lessons' content, not their threads: the player's threading is
// tested in test_lessons, which the ThreadSanitizer job runs; this program is left out of it,
// since under TSan the reference GEMM makes each lesson's CNN steps over 100 times slower.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/mirrored_strategy.h"
#include "lessons/player/lesson.h"
#include "lessons/player/player.h"
#include "tests/support/lesson_play.h"
#include "virtualgpu/workers/hierarchical_all_reduce.h"

namespace mirrorlab::lessons {
namespace {

PlayerOptions course_data() {
  PlayerOptions options;
  options.data = std::make_shared<core::FashionMnist>(
      core::FashionMnist{core::synthetic_dataset(2048, 3), core::synthetic_dataset(64, 9)});
  return options;
}

Lesson course_lesson(const std::string& id) {
  for (Lesson& l : load_course(MIRRORLAB_SOURCE_DIR "/lessons")) {
    if (l.id == id) return std::move(l);
  }
  ADD_FAILURE() << "no lesson " << id;
  return {};
}

TEST(Course, EveryLessonThatIsNotComingPlaysWithEveryCheckPassing) {
  int played = 0;
  for (Lesson& l : load_course(MIRRORLAB_SOURCE_DIR "/lessons")) {
    if (l.coming) continue;
    const std::string id = l.id;
    LessonPlayer player(std::move(l), course_data());
    EXPECT_EQ(failed_checks(player), std::vector<std::string>{}) << id;
    ++played;
  }
  EXPECT_GE(played, 6);
}

// The all-reduce skipped: each replica keeps its own gradients, as if it never happened. Told
// before the recorder, so the step record sees what the update will use.
class SkipAllReduce : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    replicas_ = start.replicas;
    return {true, false, false};
  }
  void on_all_reached(const core::PausePoint& p) override {
    if (p.boundary != core::StepBoundary::kBackward) return;
    kept_.clear();
    for (core::Replica* r : replicas_) {
      const auto g = r->model().grads();
      kept_.emplace_back(g.begin(), g.end());
    }
  }
  void on_collective_step(const vgpu::CollectiveStep& step) override {
    if (step.index + 1 != static_cast<int>(replicas_.size() - 1) * 2) return;  // the ring's last
    for (std::size_t i = 0; i < replicas_.size() && i < kept_.size(); ++i) {
      std::copy(kept_[i].begin(), kept_[i].end(), replicas_[i]->model().grads().begin());
    }
  }

 private:
  std::vector<core::Replica*> replicas_;
  std::vector<std::vector<float>> kept_;
};

// The course's data, with `breaker` told of every step of every run before anyone else.
PlayerOptions course_data_broken_by(std::shared_ptr<core::StepListener> breaker) {
  PlayerOptions options = course_data();
  options.on_new_session = [breaker](core::TrainingSession& s) {
    s.post([&s, breaker] { s.strategy().add_listener(breaker.get(), true); });
  };
  return options;
}

TEST(Course, GradientsInSyncFailsWhenTheAllReduceIsSkipped) {
  LessonPlayer player(course_lesson("gradients-in-sync"),
                      course_data_broken_by(std::make_shared<SkipAllReduce>()));
  const std::vector<std::string> failed = failed_checks(player);
  ASSERT_GE(failed.size(), 2u);
  EXPECT_EQ(failed[0], "2: after the all-reduce all four hold the same gradients, to the bit");
  EXPECT_EQ(failed[1], "3: after 21 steps the four fingerprints are the same");
  // The strategy's own fingerprint check stops the run too, saying so.
  EXPECT_NE(player.run_error(), "");
}

TEST(Course, LossScalingFailsWhenEachReplicaDividesByItsShard) {
  Lesson l = course_lesson("loss-scaling");
  l.steps[0].setup->loss_scaling = core::LossScaling::kShardMean;  // the right way done wrong
  LessonPlayer player(std::move(l), course_data());
  const std::vector<std::string> failed = failed_checks(player);
  EXPECT_EQ(failed, (std::vector<std::string>{
                        "1: the summed gradient is the global batch's mean gradient",
                        "1: after 10 steps the weights are those of one device (to float "
                        "rounding)"}));
}

TEST(Course, GlobalBatchFailsWhenTheBatchIsSplitOtherwise) {
  Lesson l = course_lesson("global-batch");
  l.steps[0].setup->devices.gpus =
      2;  // 1000 examples cut into batches of 32: 31 full, then 8 as 4 + 4
  l.steps[2].setup->batch_per_replica = 3;  // 9 examples in one batch of 12: 3, 3, 3, 0
  LessonPlayer player(std::move(l), course_data());
  const std::vector<std::string> failed = failed_checks(player);
  EXPECT_EQ(
      failed,
      (std::vector<std::string>{
          "1: the global batch is 16 x 3", "1: an epoch is 21 steps, the last one short",
          "2: the last batch holds the 40 examples left", "2: /gpu:0 takes ceil(40 / 3) = 14",
          "2: /gpu:2 takes the 12 left", "3: three of the four replicas get an empty shard"}));
}

TEST(Course, DevicesFailsWhenTheReplicaFitsAfterAll) {
  Lesson l = course_lesson("devices");
  l.steps[2].actions[0].memory_mib = {1024, 1024};
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{"3: a replica that does not fit stops the run with an "
                                      "out-of-memory on its device"}));
}

TEST(Course, AllReduceAlgorithmsFailsWhenTheAlgorithmIsAnother) {
  Lesson l = course_lesson("allreduce-algorithms");
  l.steps[0].setup->allreduce = "ring";               // pause_at allreduce-step-2 is then mid-ring
  l.steps[1].actions[0].allreduce = "reduce-to-one";  // whose 6th step never comes
  LessonPlayer player(std::move(l), course_data());
  const std::vector<std::string> failed = failed_checks(player);
  ASSERT_GE(failed.size(), 3u);
  EXPECT_EQ(failed[0], "1: /gpu:0 receives (N - 1) x S");
  EXPECT_EQ(failed[1], "1: /gpu:1 receives only the sum: S");
  EXPECT_EQ(failed[2], "1: two steps: reduce, then broadcast");
}

TEST(Course, FitAndCustomLoopFailsWhenTheShortBatchIsWeighedOtherwise) {
  Lesson l = course_lesson("fit-and-custom-loop");
  l.steps[0].setup->batch_per_replica = 25;  // 1000 examples: 20 full batches of 50
  l.steps[1].setup->loss_scaling =
      core::LossScaling::kBatchMean;  // compute_average_loss(global_batch_size=2)
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{
                "1: one epoch is 16 global steps", "1: the short last batch was kept, not dropped",
                "4: the summed gradient is 2/3 of the mean (at most 0.667)"}));
}

TEST(Course, FitAndCustomLoopFailsWhenNoReplicaIsLeftEmpty) {
  Lesson l = course_lesson("fit-and-custom-loop");
  l.steps[1].setup->train_examples = 51;  // the last batch of 3: one each
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(
      failed_checks(player),
      (std::vector<std::string>{"3: one replica runs _step_fn on no examples",
                                "4: the summed gradient is 2/3 of the mean (at most 0.667)"}));
}

// NCCL allowed on the virtual GPUs (as if they were CUDA GPUs of their own), and the machines
// swapped: the DGX's NVSwitch and the laptop's one card are what its checks are about.
TEST(Course, NcclAgainstTheFallbackFailsWhenNcclRunsOrTheMachinesAreOthers) {
  Lesson l = course_lesson("nccl-against-the-fallback");
  l.steps[0].setup->allreduce = "ring";    // a run that trains: nothing was refused
  l.steps[2].topology = "nvlink-pairs-4";  // no NVSwitch: no NVLS
  l.steps[4].topology = "pcie-2";          // GPUs of their own: NCCL runs
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{
                "1: NCCL is refused on virtual GPUs", "3: NCCL picks NVLS on NVSwitch",
                "3: NCCL all-reduces the CNN's gradients in under 40 us", "5: no NCCL on one card",
                "5: the ring, TensorFlow's choice, takes over 220 us ..."}));
}

// The machines and batches swapped: the eight H100s' step on 4 A100s bridged in pairs, the
// PCIe cards' small batch busy and their busy one small, the laptop's one card replaced by GPUs of
// their own kept busy. The compute against the all-reduce is what its checks are about.
TEST(Course, ComputationAgainstCommunicationFailsWhenComputeAndAllReduceWeighOtherwise) {
  Lesson l = course_lesson("computation-against-communication");
  l.steps[2].topology = "nvlink-pairs-4";      // 4 GPUs, a slower all-reduce
  l.steps[3].setup = l.steps[4].setup;         // PCIe at 4096 a replica ...
  l.steps[4].setup->batch_per_replica = 64;    // ... and at 64
  l.steps[6].topology = "dgx-h100";            // GPUs of their own instead of one card's ...
  l.steps[6].setup->batch_per_replica = 4096;  // ... kept busy
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{"3: 8 GPUs give more than 6 times one GPU's images/s ...",
                                      "3: ... and every one of them pays for itself",
                                      "4: the second card does not pay for itself",
                                      "4: 2 cards give less than 1.5 times one card's images/s",
                                      "5: 2 cards give more than 1.9 times one card's images/s",
                                      "5: the second card pays for itself",
                                      "7: 4 logical GPUs of one card are barely faster than one",
                                      "7: only the first device pays for itself"}));
}

// The step across workers skipped on worker 0: it keeps its own worker's sum, as if the workers
// never exchanged. Told before the recorder, like SkipAllReduce.
class SkipAcrossWorkers : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    replicas_ = start.replicas;
    return {true, false, false};
  }
  void on_collective_step(const vgpu::CollectiveStep& step) override {
    if (replicas_.empty()) return;
    const auto grads = replicas_[0]->model().grads();
    if (step.phase == vgpu::kAcrossWorkersPhase) {
      std::copy(kept_.begin(), kept_.end(), grads.begin());  // the sum before the exchange
    } else {
      kept_.assign(grads.begin(), grads.end());
    }
  }

 private:
  std::vector<core::Replica*> replicas_;
  std::vector<float> kept_;
};

TEST(Course, SeveralMachinesFailsWhenTheWorkersDoNotExchangeTheirSums) {
  LessonPlayer player(course_lesson("several-machines"),
                      course_data_broken_by(std::make_shared<SkipAcrossWorkers>()));
  const std::vector<std::string> failed = failed_checks(player);
  ASSERT_GE(failed.size(), 1u);
  EXPECT_EQ(failed[0], "3: the weights of 2 workers x 2 devices are those of 1 worker x 4 devices");
  // The strategy compares the workers' fingerprints after every step and stops the run.
  EXPECT_NE(player.run_error().find("workers out of sync after step 1"), std::string::npos)
      << player.run_error();
}

TEST(Course, SeveralMachinesFailsOnOneWorker) {
  Lesson l = course_lesson("several-machines");
  l.steps[0].setup->workers = 1;  // 2 devices alone: no step across workers, half the replicas
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{
                "1: two workers train together", "1: 2 workers x 2 devices = 4 replicas in sync",
                "1: the global batch is 16 x 2 x 2 = 64",
                "2: within (2 steps of the ring), across, back: 4 steps",
                "2: the third step goes across workers", "3: eleven global steps ran"}));
  // The ring on 2 devices has no third step to pause at, and says so.
  EXPECT_EQ(player.run_error(), "pause_at \"allreduce-step-3\": this all-reduce has only 2 steps");
}

// Lesson 11 with overlap switched off: the packs go after backward, here and in the model.
TEST(Course, PacksAndOverlapFailsWithoutOverlap) {
  Lesson l = course_lesson("packs-and-overlap");
  for (LessonStep& step : l.steps) {
    if (step.setup) step.setup->packs.overlap = false;
  }
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{
                "2: each replica sends its first pack while its backward still computes",
                "3: the model hides part of the all-reduce behind backward on 2 H100s ...",
                "3: ... and the step is shorter than one buffer's 194 us",
                "4: most of the all-reduce hides behind a long backward ...",
                "4: ... and the step is shorter than one buffer's 700 us"}));
}

// Lesson 11 with the packs merged into one buffer: nothing to overlap, nothing to pay.
TEST(Course, PacksAndOverlapFailsWithOneBuffer) {
  Lesson l = course_lesson("packs-and-overlap");
  for (LessonStep& step : l.steps) {
    if (step.setup) step.setup->packs.bytes_per_pack = 0;
  }
  LessonPlayer player(std::move(l), course_data());
  EXPECT_EQ(failed_checks(player),
            (std::vector<std::string>{
                "2: 64 KiB packs: the dense layers, then the convolution",
                "2: each replica sends its first pack while its backward still computes",
                "3: the model hides part of the all-reduce behind backward on 2 H100s ...",
                "3: ... and the step is shorter than one buffer's 194 us",
                "4: most of the all-reduce hides behind a long backward ...",
                "4: ... and the step is shorter than one buffer's 700 us",
                "5: six packs' all-reduces cost twice what two cost ...",
                "5: ... and the step is slower than one buffer's 194 us"}));
}

}  // namespace
}  // namespace mirrorlab::lessons
