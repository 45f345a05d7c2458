// TrainingSession: the GUI's run controller. Stepping it must train exactly as fit() does,
// commands must never hang, and a bad configuration must be an error, not a crash.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "core/checkpoint/checkpoint_folder.h"
#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "tests/support/temp_folder.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab {
namespace {

std::shared_ptr<const core::FashionMnist> small_data(std::size_t train = 512) {
  auto data = std::make_shared<core::FashionMnist>();
  data->train = core::synthetic_dataset(train, 3);
  data->test = core::synthetic_dataset(96, 9);
  return data;
}

core::SessionConfig small_config(int gpus = 2) {
  core::SessionConfig c;
  c.settings.devices.gpus = gpus;
  c.settings.devices.memory_limits_mib = {64};
  c.settings.model = core::ModelKind::kMlp;
  c.settings.seed = 5;
  c.settings.batch_per_replica = 32;
  c.settings.epochs = 2;
  return c;
}

std::vector<float> weights(core::TrainingSession& session) {
  const auto params = session.strategy().replica(0).model().params();
  return {params.begin(), params.end()};
}

TEST(TrainingSession, StartsPausedAndStepsOneGlobalStepPerCommand) {
  core::TrainingSession session(small_data(), small_config());
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kPaused);
  EXPECT_EQ(snap.steps_done, 0);
  ASSERT_EQ(snap.devices.size(), 2u);
  EXPECT_EQ(snap.devices[1].name, "/gpu:1");
  EXPECT_EQ(snap.devices[0].limit, 64 * vgpu::kMiB);
  EXPECT_GT(snap.devices[0].in_use, 0u);  // the model's variables live on the device
  EXPECT_EQ(snap.global_batch, 64u);
  EXPECT_EQ(snap.steps_per_epoch, 8);

  session.step();
  session.step();
  session.step();
  ASSERT_TRUE(session.wait_until_idle(60));
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kPaused);
  ASSERT_EQ(snap.steps_done, 3);
  ASSERT_EQ(snap.steps.size(), 3u);
  EXPECT_EQ(snap.steps[2].step, 3);
  EXPECT_EQ(snap.steps[2].examples, 64);
  EXPECT_GT(snap.steps[0].loss, 0.0);
  EXPECT_EQ(snap.step_in_epoch, 3);
  // Every phase of every step on both devices was recorded, and the snapshot copied them once.
  int update_events = 0;
  for (const core::RunEvent& e : snap.events) {
    if (e.phase == core::Phase::kUpdate) ++update_events;
  }
  EXPECT_EQ(update_events, 3 * 2);
  const std::size_t events = snap.events.size();
  session.update(snap);
  EXPECT_EQ(snap.events.size(), events);
  EXPECT_GT(snap.images_per_second(), 0.0);
}

TEST(TrainingSession, SteppingTrainsExactlyAsFitDoes) {
  const auto data = small_data();
  core::SessionConfig config = small_config();
  config.settings.max_steps = 11;  // crosses the epoch boundary at step 8

  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(core::session_devices(config));
  core::MirroredStrategy reference(registry.logical_devices(),
                                   core::strategy_options(config.settings));
  const core::History history =
      core::fit(reference, data->train, &data->test, core::fit_options(config.settings));
  const auto ref = reference.replica(0).model().params();

  core::TrainingSession session(data, config);
  for (int i = 0; i < 11; ++i) session.step();
  ASSERT_TRUE(session.wait_until_idle(120));
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kFinished);
  EXPECT_EQ(snap.steps_done, 11);
  ASSERT_EQ(snap.epoch_logs.size(), history.epochs.size());
  EXPECT_TRUE(snap.epoch_logs[0].has_validation);
  EXPECT_DOUBLE_EQ(snap.epoch_logs[0].validation.loss, history.epochs[0].validation.loss);
  EXPECT_DOUBLE_EQ(snap.steps.back().loss, history.final_train_loss);
  const std::vector<float> got = weights(session);
  ASSERT_EQ(got.size(), ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "parameter " << i;

  session.step();  // finished: a further step is ignored, not an error
  ASSERT_TRUE(session.wait_until_idle(10));
  session.update(snap);
  EXPECT_EQ(snap.steps_done, 11);
}

TEST(TrainingSession, RunThenPauseStopsAdvancing) {
  core::SessionConfig config = small_config();
  config.settings.epochs = 100;
  core::TrainingSession session(small_data(), config);
  core::SessionSnapshot snap;
  session.run();
  for (int i = 0; i < 2000 && snap.steps_done < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.update(snap);
  }
  EXPECT_EQ(snap.state, core::SessionState::kRunning);
  ASSERT_GE(snap.steps_done, 3);
  session.pause();
  ASSERT_TRUE(session.wait_until_idle(60));
  session.update(snap);
  const std::int64_t paused_at = snap.steps_done;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  session.update(snap);
  EXPECT_EQ(snap.steps_done, paused_at);
  EXPECT_EQ(snap.state, core::SessionState::kPaused);
}

TEST(TrainingSession, DestroyingWhileRunningOrPausedEndsTheThread) {
  core::SessionConfig config = small_config();
  config.settings.epochs = 1000;
  {
    core::TrainingSession running(small_data(), config);
    running.run();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }  // the destructor stops and joins; a hang here fails by the test's timeout
  {
    core::TrainingSession paused(small_data(), config);
    paused.step();
  }
  SUCCEED();
}

TEST(TrainingSession, PostedTasksRunBetweenStepsOnTheTrainingThread) {
  core::TrainingSession session(small_data(), small_config());
  std::atomic<std::int64_t> seen_steps{-1};
  std::atomic<bool> other_thread{false};
  const auto caller = std::this_thread::get_id();
  session.step();
  ASSERT_TRUE(session.wait_until_idle(60));
  session.post([&] {
    seen_steps = session.strategy().steps_done();
    other_thread = std::this_thread::get_id() != caller;
  });
  ASSERT_TRUE(session.wait_until_idle(60));
  EXPECT_EQ(seen_steps.load(), 1);
  EXPECT_TRUE(other_thread.load());
}

TEST(TrainingSession, MemoryLimitTooSmallForTheModelThrowsWithTheDevice) {
  core::SessionConfig config = small_config();
  config.settings.model = core::ModelKind::kCnn;
  config.settings.devices.gpus = 2;
  config.settings.devices.memory_limits_mib = {1};
  try {
    core::TrainingSession session(small_data(), config);
    FAIL() << "a 1 MiB device cannot hold the CNN";
  } catch (const vgpu::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("/gpu:0"), std::string::npos) << e.what();
  }
}

TEST(TrainingSession, AStepThatRunsOutOfMemoryFailsTheSessionWithTheReason) {
  core::SessionConfig config = small_config(1);
  config.settings.devices.memory_limits_mib = {
      4};  // the MLP's variables fit; 8192 activations do not
  config.settings.batch_per_replica = 8192;
  core::TrainingSession session(small_data(8192), config);
  session.step();
  ASSERT_TRUE(session.wait_until_idle(60));
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kFailed);
  EXPECT_NE(snap.error.find("/gpu:0"), std::string::npos) << snap.error;
  session.run();  // a failed session stays failed
  ASSERT_TRUE(session.wait_until_idle(10));
  session.update(snap);
  EXPECT_EQ(snap.steps_done, 0);
}

// Waits (polling the snapshot, as the GUI does) until the replicas are held at a boundary.
bool wait_held(core::TrainingSession& session, core::SessionSnapshot& snap) {
  for (int i = 0; i < 20000; ++i) {
    session.update(snap);
    if (snap.held_at) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(TrainingSession, NextPhaseWalksOneStepBoundaryByBoundaryAndRecordsIt) {
  core::TrainingSession session(small_data(), small_config());
  core::SessionSnapshot snap;
  session.next_phase();  // starts a step that stops after its split
  ASSERT_TRUE(wait_held(session, snap));
  EXPECT_TRUE(snap.pausing_at_phases);
  EXPECT_EQ(snap.held_at->boundary, core::StepBoundary::kSplit);
  EXPECT_EQ(snap.steps_done, 0);  // the step is under way, not done
  EXPECT_EQ(snap.step_record.step, 0);
  ASSERT_EQ(snap.step_record.replicas.size(), 2u);
  EXPECT_EQ(snap.step_record.indices.size(), 64u);  // the global batch is recorded

  std::vector<core::StepBoundary> seen{snap.held_at->boundary};
  for (int i = 0; i < 20 && seen.back() != core::StepBoundary::kUpdate; ++i) {
    const std::string before = snap.held_at->label();
    session.next_phase();
    // Wait for a new boundary (a different label).
    for (int k = 0; k < 20000; ++k) {
      session.update(snap);
      if (snap.held_at && snap.held_at->label() != before) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(snap.held_at.has_value());
    seen.push_back(snap.held_at->boundary);
  }
  // split, forward, backward, the ring's or reduce-to-one's steps, update.
  ASSERT_GE(seen.size(), 5u);
  EXPECT_EQ(seen[1], core::StepBoundary::kForward);
  EXPECT_EQ(seen[2], core::StepBoundary::kBackward);
  EXPECT_EQ(seen[3], core::StepBoundary::kAllReduceStep);
  EXPECT_EQ(seen.back(), core::StepBoundary::kUpdate);

  session.step();  // whole steps again: the held step runs to its end
  ASSERT_TRUE(session.wait_until_idle(60));
  session.update(snap);
  EXPECT_FALSE(snap.held_at.has_value());
  EXPECT_FALSE(snap.pausing_at_phases);
  EXPECT_EQ(snap.steps_done, 2);  // the held step, then the one step asked for
  EXPECT_TRUE(snap.step_record.complete);
}

TEST(TrainingSession, StoppingWhileAStepIsHeldEndsAtOnceWithoutAnError) {
  core::SessionSnapshot snap;
  {
    core::TrainingSession session(small_data(), small_config());
    session.next_phase();
    session.next_phase();
    ASSERT_TRUE(wait_held(session, snap));
    session.stop();
    ASSERT_TRUE(session.wait_until_idle(60));
    session.update(snap);
    EXPECT_EQ(snap.state, core::SessionState::kStopped);
    EXPECT_TRUE(snap.error.empty()) << snap.error;
  }  // and the destructor joins without waiting for a click
}

// ---------------------------------------------------------------------------------------------
// Faults and checkpoints, as the window's controls use them
// ---------------------------------------------------------------------------------------------

void steps(core::TrainingSession& session, int n) {
  for (int i = 0; i < n; ++i) session.step();
  ASSERT_TRUE(session.wait_until_idle(60));
}

TEST(TrainingSession, FaultsFromTheConfigAndSetWhileItRuns) {
  core::SessionConfig config = small_config(3);
  config.faults.slow.push_back({1, 3.0});
  core::TrainingSession session(small_data(), config);
  steps(session, 2);
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.faults_note, "From step 1: /gpu:1 computes 3x slower");
  int waits = 0;
  for (const core::RunEvent& e : snap.events) waits += e.phase == core::Phase::kWait;
  EXPECT_EQ(waits, 2 * 3);

  core::FaultPlan plan;
  plan.failures.push_back({2, 4, core::FailurePhase::kBackward});
  session.set_faults(plan);
  steps(session, 3);  // steps 3 and 4; the one after is not run: the session failed
  session.update(snap);
  EXPECT_EQ(snap.faults_note, "From step 3: /gpu:2 fails in step 4 (backward)");
  EXPECT_EQ(snap.state, core::SessionState::kFailed);
  EXPECT_EQ(snap.steps_done, 3);
  EXPECT_EQ(snap.error.find("/gpu:2 failed in step 4, during its backward pass"), 0u) << snap.error;
  EXPECT_EQ(session.strategy().replica(1).slowdown(), 1.0) << "the new plan has no straggler";

  core::FaultPlan impossible;
  impossible.nans.push_back({7, 9});
  core::TrainingSession other(small_data(), small_config());
  other.set_faults(impossible);
  ASSERT_TRUE(other.wait_until_idle(60));
  other.update(snap);
  EXPECT_EQ(snap.faults_note,
            "These faults cannot happen: a NaN names /gpu:7, but the run has 2 devices (/gpu:0 "
            "to /gpu:1)");
}

TEST(TrainingSession, SavesACheckpointAndASessionGoesOnFromItBitForBit) {
  const auto data = small_data();
  testing::TempFolder temp("session-checkpoint");
  core::TrainingSession whole(data, small_config());
  steps(whole, 11);

  core::TrainingSession first(data, small_config());
  steps(first, 5);
  { std::ofstream(temp / "file") << "x"; }
  first.save_checkpoint(temp / "ckpt");
  first.save_checkpoint(temp / "file" / "ckpt");  // under a file: cannot be made
  ASSERT_TRUE(first.wait_until_idle(60));
  core::SessionSnapshot snap;
  first.update(snap);
  EXPECT_EQ(snap.checkpoint_note.rfind("Not saved: ", 0), 0u) << snap.checkpoint_note;

  const core::CheckpointFolder folder(temp / "ckpt");
  auto resume = std::make_shared<core::SessionResume>();
  resume->file = folder.newest().state;
  resume->checkpoint = folder.load(folder.newest());
  EXPECT_EQ(resume->checkpoint.position.history.steps, 5);
  core::SessionConfig config = core::config_for_checkpoint(resume->checkpoint, small_config());
  config.resume = resume;
  core::TrainingSession second(data, config);
  second.update(snap);
  EXPECT_EQ(snap.steps_done, 5);
  EXPECT_EQ(snap.checkpoint_note, "Loaded " + resume->file.string() + ": step 5");
  EXPECT_TRUE(snap.resume_changes.empty());
  steps(second, 6);
  EXPECT_EQ(weights(second), weights(whole));

  // On three devices: it goes on, and says what changed.
  core::SessionConfig three = core::config_for_checkpoint(resume->checkpoint, small_config(3));
  three.resume = resume;
  core::TrainingSession third(data, three);
  third.update(snap);
  ASSERT_FALSE(snap.resume_changes.empty());
  EXPECT_EQ(snap.resume_changes[0].find("3 replicas, where the checkpoint's run had 2"), 0u);

  // Not the same data: refused as the session is built, naming the file.
  try {
    core::TrainingSession wrong(small_data(256), config);
    ADD_FAILURE() << "went on from a checkpoint of other data";
  } catch (const core::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("not the same data"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mirrorlab
