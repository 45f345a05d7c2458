// Resuming from a checkpoint: 60 steps in one run equal 30 steps, stopped, then 30 more from the
// checkpoint, bit for bit (weights, optimizer state, history), for both models and every
// optimizer, across the uneven last batch of every epoch; on another number of replicas the run
// goes on from the same weights and says what changed; a checkpoint that does not fit the run is
// refused before anything is loaded.
#include <gtest/gtest.h>

#include <string>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/run_checkpoint.h"
#include "core/nn/fingerprint.h"
#include "tests/support/checkpoint_rig.h"

namespace mirrorlab {
namespace {

using testing_rig::FitRig;
using testing_rig::FitSetup;

struct ResumeCase {
  core::ModelKind model;
  core::OptimizerKind optimizer;
};

class ResumeEquivalence : public ::testing::TestWithParam<ResumeCase> {};

// Through the bytes of both files, as a checkpoint folder writes and reads them.
core::Checkpoint round_trip(const core::Checkpoint& c) {
  const core::CheckpointBytes bytes = core::encode_checkpoint(c, "ckpt.safetensors");
  return core::decode_checkpoint(bytes.state, bytes.weights, "ckpt.json", "ckpt.safetensors");
}

TEST_P(ResumeEquivalence, SixtyStepsEqualThirtyThenThirtyMoreFromTheCheckpoint) {
  FitSetup setup;
  setup.model = GetParam().model;
  setup.optimizer = GetParam().optimizer;
  FitRig whole(setup);
  whole.run_to_end();
  ASSERT_EQ(whole.loop->history().steps, 60);
  // 60 = 6 epochs of 9 steps and 6 steps of the 7th: six uneven last batches were crossed.
  ASSERT_EQ(whole.loop->history().epochs.size(), 7u);

  setup.max_steps = 30;  // 3 epochs and 3 steps of the 4th
  FitRig first(setup);
  first.run_to_end();
  ASSERT_EQ(first.loop->history().steps, 30);
  const core::Checkpoint saved = round_trip(first.checkpoint());
  EXPECT_TRUE(saved.position.in_epoch);
  EXPECT_EQ(saved.position.epoch, 4);
  EXPECT_EQ(saved.position.step_in_epoch, 3);

  setup.max_steps = 60;
  FitRig second(setup);
  core::restore_checkpoint(saved, "ckpt.json", second.config(), *second.strategy, *second.loop);
  EXPECT_EQ(second.strategy->steps_done(), 30);
  second.run_to_end();

  testing_rig::expect_same_state(whole.strategy->state(), second.strategy->state());
  testing_rig::expect_same_history(whole.loop->history(), second.loop->history());
  for (int r = 1; r < setup.replicas; ++r) {
    EXPECT_EQ(second.strategy->replica(r).model().params_fingerprint(),
              whole.strategy->replica(0).model().params_fingerprint());
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModelsAndOptimizers, ResumeEquivalence,
    ::testing::Values(ResumeCase{core::ModelKind::kMlp, core::OptimizerKind::kSgd},
                      ResumeCase{core::ModelKind::kMlp, core::OptimizerKind::kAdam},
                      ResumeCase{core::ModelKind::kMlp, core::OptimizerKind::kNadam},
                      ResumeCase{core::ModelKind::kCnn, core::OptimizerKind::kSgd},
                      ResumeCase{core::ModelKind::kCnn, core::OptimizerKind::kAdam},
                      ResumeCase{core::ModelKind::kCnn, core::OptimizerKind::kNadam}),
    [](const ::testing::TestParamInfo<ResumeCase>& info) {
      return std::string(core::to_string(info.param.model)) + "_" +
             core::to_string(info.param.optimizer);
    });

// A checkpoint taken at the end of an epoch (closed, validated) and one taken by a stop at the end
// of an epoch (its validation skipped: the resumed run makes it) go on the same way.
TEST(Resume, AtAnEpochsEndWithOrWithoutItsValidationPass) {
  FitSetup setup;
  setup.max_steps = 27;
  FitRig whole(setup);
  whole.run_to_end();

  setup.max_steps = 18;  // the end of epoch 2
  FitRig closed(setup);
  closed.run_to_end();
  EXPECT_FALSE(closed.checkpoint().position.in_epoch);

  setup.max_steps = 0;
  FitRig stopped(setup);
  core::FitOptions fit = stopped.loop->options();
  int steps = 0;
  fit.stop_requested = [&steps] { return steps == 18; };
  stopped.loop = std::make_unique<core::FitLoop>(*stopped.strategy, testing_rig::train_data(),
                                                 &testing_rig::validation_data(), fit);
  while (!stopped.loop->done()) {
    ++steps;  // the step under way asks whether to stop as its epoch ends
    stopped.loop->step();
  }
  EXPECT_EQ(stopped.loop->history().stop_reason, core::StopReason::kInterrupted);
  EXPECT_FALSE(stopped.loop->history().epochs.back().has_validation);
  const core::Checkpoint at_stop = stopped.checkpoint();
  EXPECT_TRUE(at_stop.position.in_epoch) << "the skipped validation pass is still to come";

  for (const core::Checkpoint& c : {closed.checkpoint(), at_stop}) {
    setup.max_steps = 27;
    FitRig resumed(setup);
    core::restore_checkpoint(round_trip(c), "ckpt.json", resumed.config(), *resumed.strategy,
                             *resumed.loop);
    resumed.run_to_end();
    testing_rig::expect_same_state(whole.strategy->state(), resumed.strategy->state());
    testing_rig::expect_same_history(whole.loop->history(), resumed.loop->history());
    ASSERT_EQ(resumed.loop->history().epochs.size(), 3u);
    EXPECT_TRUE(resumed.loop->history().epochs[1].has_validation);
  }
}

// A stop asked during an epoch's validation pass (Ctrl-C) takes effect between its batches, not
// after the whole pass: the run stops as a stop before the pass does, its checkpoint leaves the
// epoch to validate, and a run that goes on from it is bit for bit the run never stopped. A pass
// that may be stopped, and is not, gives the bits of one that may not.
TEST(Resume, AStopDuringTheValidationPassTakesEffectBetweenItsBatches) {
  FitSetup setup;
  setup.max_steps = 27;
  FitRig whole(setup);
  whole.run_to_end();

  FitRig asked(setup);  // asked between every two batches, never stopped
  core::FitOptions fit = asked.loop->options();
  int asks = 0;
  fit.stop_requested = [&asks] { return ++asks < 0; };
  asked.loop = std::make_unique<core::FitLoop>(*asked.strategy, testing_rig::train_data(),
                                               &testing_rig::validation_data(), fit);
  asked.run_to_end();
  testing_rig::expect_same_history(whole.loop->history(), asked.loop->history());
  // At each of the 3 epochs' ends, once before its pass and once between its two global batches
  // (20 validation examples, 12 a batch).
  EXPECT_EQ(asks, 3 * 2);

  setup.max_steps = 0;
  FitRig stopped(setup);
  fit = stopped.loop->options();
  int steps = 0, asked_in_step_18 = 0;
  // As the epoch ends (step 18) no stop is asked; between the pass's batches, one is.
  fit.stop_requested = [&] { return steps == 18 && ++asked_in_step_18 == 2; };
  stopped.loop = std::make_unique<core::FitLoop>(*stopped.strategy, testing_rig::train_data(),
                                                 &testing_rig::validation_data(), fit);
  while (!stopped.loop->done()) {
    ++steps;
    stopped.loop->step();
  }
  EXPECT_EQ(asked_in_step_18, 2) << "not asked between the validation pass's batches";
  EXPECT_EQ(stopped.loop->history().steps, 18);
  EXPECT_EQ(stopped.loop->history().stop_reason, core::StopReason::kInterrupted);
  EXPECT_FALSE(stopped.loop->history().epochs.back().has_validation);
  const core::Checkpoint at_stop = stopped.checkpoint();
  EXPECT_TRUE(at_stop.position.in_epoch) << "the stopped validation pass is still to come";
  EXPECT_EQ(at_stop.position.history.epochs.size(), 1u);

  setup.max_steps = 27;
  FitRig resumed(setup);
  core::restore_checkpoint(round_trip(at_stop), "ckpt.json", resumed.config(), *resumed.strategy,
                           *resumed.loop);
  resumed.run_to_end();
  testing_rig::expect_same_state(whole.strategy->state(), resumed.strategy->state());
  testing_rig::expect_same_history(whole.loop->history(), resumed.loop->history());
  EXPECT_TRUE(resumed.loop->history().epochs[1].has_validation);
}

TEST(Resume, OnAnotherNumberOfReplicasEveryReplicaTakesTheOneCopyAndTheChangeIsSaid) {
  FitSetup setup;
  setup.max_steps = 13;
  FitRig first(setup);
  first.run_to_end();
  const core::Checkpoint saved = round_trip(first.checkpoint());

  setup.replicas = 2;
  setup.max_steps = 40;
  FitRig second(setup);
  const std::vector<std::string> changes = core::checkpoint_changes(saved.config, second.config());
  ASSERT_GE(changes.size(), 2u);
  EXPECT_EQ(changes[0].find("2 replicas, where the checkpoint's run had 3"), 0u) << changes[0];
  EXPECT_NE(changes[1].find("the global batch is 8, was 12"), std::string::npos) << changes[1];
  core::restore_checkpoint(saved, "ckpt.json", second.config(), *second.strategy, *second.loop);
  const std::uint64_t expected = core::fingerprint(std::span<const float>(saved.state.params));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(second.strategy->replica(r).model().params_fingerprint(), expected);
  }
  testing_rig::expect_same_state(saved.state, second.strategy->state());
  // Epoch 2 had used 4 x 12 = 48 examples; it goes on in batches of 8: 52 more are 7 steps.
  EXPECT_EQ(second.loop->epoch(), 2);
  const std::span<const std::uint32_t> next = second.loop->next_batch_indices();
  const std::vector<std::uint32_t> order = core::shuffled_indices(100, first.settings.seed, 2);
  ASSERT_EQ(next.size(), 8u);
  EXPECT_EQ(next[0], order[48]);
  second.run_to_end();
  EXPECT_EQ(second.loop->history().steps, 40);
  EXPECT_EQ(second.loop->history().epochs[1].steps, 4 + 7);
  EXPECT_EQ(second.loop->history().epochs[1].train.examples, 100);
}

// Each mismatch is refused with a sentence naming the file and what differs, and the run it was
// refused by is untouched: same weights, no step counted.
TEST(Resume, ACheckpointThatDoesNotFitTheRunIsRefusedBeforeAnythingIsLoaded) {
  FitSetup setup;
  setup.max_steps = 5;
  FitRig first(setup);
  first.run_to_end();
  const core::Checkpoint saved = first.checkpoint();

  struct Case {
    const char* what;
    FitSetup setup;
    std::function<void(core::Checkpoint&)> change;
    std::string expected;
  };
  FitSetup cnn = setup, sgd = setup, short_run = setup;
  cnn.model = core::ModelKind::kCnn;
  sgd.optimizer = core::OptimizerKind::kSgd;
  short_run.epochs = 1;
  auto none = [](core::Checkpoint&) {};
  const std::vector<Case> cases = {
      {"another model", cnn, none, "ckpt.json: holds a mlp model; this run trains a cnn"},
      {"another optimizer", sgd, none,
       "ckpt.json: holds the state of a adam optimizer; this run uses sgd"},
      {"other data", setup, [](core::Checkpoint& c) { c.config.train_crc32 ^= 1; },
       "not the same data"},
      {"another seed", setup, [](core::Checkpoint& c) { c.config.settings.seed += 1; },
       "was trained with seed 6; this run has 5"},
      {"another momentum", setup,
       [](core::Checkpoint& c) { c.config.settings.optimizer.momentum = 0.5f; },
       "was trained with momentum 0.5; this run has 0"},
      {"another loss scaling", setup,
       [](core::Checkpoint& c) { c.config.settings.loss_scaling = core::LossScaling::kBatchMean; },
       "was trained with loss_scaling batch-mean; this run has replica-mean"},
      {"another order", setup, [](core::Checkpoint& c) { c.order_crc32 ^= 1; },
       "was shuffled into another order"},
      {"past the epochs", short_run,
       [](core::Checkpoint& c) {
         c.position.epoch = 2;
         core::EpochLog first;
         first.epoch = 1;
         c.position.history.epochs.push_back(first);
       },
       "past the 1 epochs"},
      {"a short weight list", setup, [](core::Checkpoint& c) { c.state.params.pop_back(); },
       "the state does not fit"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    core::Checkpoint c = saved;
    k.change(c);
    FitRig target(k.setup);
    const std::uint64_t before = target.strategy->replica(1).model().params_fingerprint();
    try {
      core::restore_checkpoint(c, "ckpt.json", target.config(), *target.strategy, *target.loop);
      ADD_FAILURE() << "accepted";
    } catch (const core::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(k.expected), std::string::npos) << e.what();
      EXPECT_EQ(e.file(), "ckpt.json");
    }
    EXPECT_EQ(target.strategy->replica(1).model().params_fingerprint(), before);
    EXPECT_EQ(target.strategy->steps_done(), 0);
    EXPECT_EQ(target.loop->history().steps, 0);
    EXPECT_EQ(target.loop->epoch(), 0);
  }
}

TEST(Resume, TheOptimizersProgressIsCheckedAndAFailedRestoreChangesNothing) {
  FitSetup setup;
  setup.max_steps = 3;
  FitRig rig(setup);
  rig.run_to_end();
  core::ReplicaState state = rig.strategy->state();
  const core::ReplicaState before = state;
  state.progress.iterations = -1;
  EXPECT_THROW(rig.strategy->restore(state, 3), std::invalid_argument);
  state.progress = {core::kMaxOptimizerIterations + 1, 1.0};  // would overflow as it goes on
  EXPECT_THROW(rig.strategy->restore(state, 3), std::invalid_argument);
  state.progress = {3, 1.5};
  EXPECT_THROW(rig.strategy->restore(state, 3), std::invalid_argument);
  state = before;
  state.slots[1].name = "w";
  try {
    rig.strategy->restore(state, 3);
    ADD_FAILURE() << "accepted a slot named w";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("its optimizer slots are m, w; the adam optimizer "
                                         "keeps m, v"),
              std::string::npos)
        << e.what();
  }
  testing_rig::expect_same_state(rig.strategy->state(), before);
}

}  // namespace
}  // namespace mirrorlab
