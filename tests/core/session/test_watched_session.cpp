// TrainingSession watching a run that another thread trains (mirrorlab.gui.watch in Python): what
// the fit tells and the strategy's listeners show must be that run, watching must change nothing
// of its numbers, and the window's commands must never train, pause or rebuild it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <numeric>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "core/settings/run_settings.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

core::SessionConfig watched_config() {
  core::SessionConfig c;
  c.settings.devices.gpus = 2;
  c.settings.model = core::ModelKind::kMlp;
  c.settings.seed = 5;
  c.settings.batch_per_replica = 16;
  c.settings.epochs = 2;
  return c;
}

// What Python's model.fit does: a strategy of its own on the process's devices, trained on the
// calling thread, a watching session told of the fit.
struct PythonLikeRun {
  PythonLikeRun() : train(core::synthetic_dataset(200, 3)), test(core::synthetic_dataset(40, 9)) {
    registry.set_logical_device_configuration(2, 128);
    strategy = std::make_unique<core::MirroredStrategy>(registry.logical_devices(),
                                                        core::strategy_options(config.settings));
  }
  core::History fit(core::TrainingSession* watching) {
    core::FitOptions options = core::fit_options(config.settings);
    if (watching) watching->watched_fit_began(options.epochs, 32);
    core::History h =
        core::fit(*strategy, train, &test, options, watching ? &watching->watched_fit() : nullptr);
    if (watching) watching->watched_fit_ended("");
    return h;
  }
  std::vector<float> weights() {
    const auto p = strategy->replica(0).model().params();
    return {p.begin(), p.end()};
  }

  core::SessionConfig config = watched_config();
  core::Dataset train, test;
  vgpu::DeviceRegistry registry;
  std::unique_ptr<core::MirroredStrategy> strategy;
};

TEST(WatchedSession, ShowsTheFitItIsToldOfAndWhoDrivesIt) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  EXPECT_TRUE(session.watching());
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.driven_by, "Python");
  EXPECT_EQ(snap.state, core::SessionState::kPaused);
  EXPECT_EQ(snap.steps_done, 0);
  EXPECT_EQ(snap.replicas_in_sync, 2);
  ASSERT_EQ(snap.devices.size(), 2u);

  const core::History h = run.fit(&session);
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kPaused);  // the fit ended: waiting for Python
  ASSERT_EQ(h.steps, 14);                              // 200 / 32 = 7 a epoch, 2 epochs
  EXPECT_EQ(snap.steps_done, h.steps);
  ASSERT_EQ(snap.steps.size(), 14u);
  EXPECT_EQ(snap.steps.back().step, 14);
  EXPECT_EQ(snap.steps.back().epoch, 2);
  EXPECT_EQ(snap.steps[6].examples, 200 - 6 * 32);  // the epoch's last batch, uneven
  EXPECT_DOUBLE_EQ(snap.steps.back().loss, h.final_train_loss);
  EXPECT_EQ(snap.epochs, 2);
  EXPECT_EQ(snap.steps_per_epoch, 7);
  EXPECT_EQ(snap.global_batch, 32u);
  ASSERT_EQ(snap.epoch_logs.size(), 2u);
  EXPECT_DOUBLE_EQ(snap.epoch_logs[1].train.loss, h.epochs[1].train.loss);
  EXPECT_DOUBLE_EQ(snap.epoch_logs[1].validation.loss, h.epochs[1].validation.loss);
  std::size_t updates = 0;
  for (const core::RunEvent& e : snap.events) updates += e.phase == core::Phase::kUpdate;
  EXPECT_EQ(updates, 14u * 2);
  // The last step's record keeps its examples' pictures: the run's data may be gone by the time
  // the window draws them.
  const core::RecordedStep& r = snap.step_record;
  EXPECT_EQ(r.step, 13);
  ASSERT_EQ(r.indices.size(), 8u);  // the epoch's last batch
  ASSERT_EQ(r.images.size(), 8u * 28 * 28);
  for (std::size_t i = 0; i < r.indices.size(); ++i) {
    const std::uint8_t* image = run.train.image(r.indices[i]);
    ASSERT_TRUE(std::equal(image, image + 28 * 28, r.images.begin() + i * 28 * 28)) << i;
  }
}

TEST(WatchedSession, WatchingChangesNothingOfTheRunsNumbers) {
  PythonLikeRun alone, watched;
  alone.fit(nullptr);
  {
    core::TrainingSession session(*watched.strategy, watched.config, "Python");
    watched.fit(&session);
  }
  EXPECT_EQ(alone.weights(), watched.weights());
  // Ended, it listens no more: the strategy trains on without it, as a run never watched.
  alone.fit(nullptr);
  watched.fit(nullptr);
  EXPECT_EQ(alone.weights(), watched.weights());
}

TEST(WatchedSession, TheWindowsCommandsNeverTrainOrRebuildIt) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  session.run();
  session.step();
  session.next_phase();
  session.set_pausing_at_phases(true);
  EXPECT_TRUE(session.wait_until_idle(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.steps_done, 0);
  EXPECT_EQ(run.strategy->steps_done(), 0);
  EXPECT_FALSE(snap.pausing_at_phases);
  EXPECT_NE(session.reconfigure_devices({{64}, {64}}).find("trained from Python"),
            std::string::npos);
  session.set_faults(core::FaultPlan{});
  session.save_checkpoint("never-written");
  session.update(snap);
  EXPECT_NE(snap.faults_note.find("cannot happen"), std::string::npos) << snap.faults_note;
  EXPECT_NE(snap.checkpoint_note.find("Not saved"), std::string::npos) << snap.checkpoint_note;
  EXPECT_FALSE(std::filesystem::exists("never-written"));
  // Its steps still train as Python asks (the pausing asked for above holds nothing).
  EXPECT_EQ(run.fit(&session).steps, 14);
}

TEST(WatchedSession, AFitThatFailsSaysSoUntilTheNextOne) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  session.watched_fit_began(1, 32);
  session.watched_fit_ended("DivergedError: the loss is NaN");
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kFailed);
  EXPECT_EQ(snap.error, "DivergedError: the loss is NaN");
  run.fit(&session);
  session.update(snap);
  EXPECT_EQ(snap.state, core::SessionState::kPaused);
  EXPECT_EQ(snap.error, "");
}

TEST(WatchedSession, ACustomLoopsStepsCountWithTheirBatchThoughNoFitTellsOfThem) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  std::vector<std::uint32_t> order(24);
  std::iota(order.begin(), order.end(), 0u);
  run.strategy->train_step(core::GlobalBatch{&run.train, order, 12});  // strategy.run's step
  run.strategy->train_step(core::GlobalBatch{&run.train, order, 12});
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.steps_done, 2);
  EXPECT_EQ(snap.global_batch, 24u);  // 12 a replica, not the settings' 16
  EXPECT_EQ(snap.batch_per_replica(), 12u);
  EXPECT_EQ(snap.epochs, 0);                           // no fit: no epochs
  EXPECT_EQ(snap.state, core::SessionState::kPaused);  // between the loop's steps
  EXPECT_TRUE(snap.steps.empty());
  EXPECT_EQ(snap.step_record.step, 1);
}

TEST(WatchedSession, RecordingOffLeavesTheStepsUnrecordedButTheFitsCurvesWhole) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  session.set_recording(false);  // no window open
  run.fit(&session);
  core::SessionSnapshot snap;
  session.update(snap);
  EXPECT_EQ(snap.steps.size(), 14u);  // the fit's steps, for the curves
  EXPECT_EQ(snap.step_record.step, -1);
  std::size_t training_events = 0;
  for (const core::RunEvent& e : snap.events) training_events += e.phase == core::Phase::kUpdate;
  EXPECT_EQ(training_events, 0u);
  session.set_recording(true);  // a window opened again
  run.fit(&session);
  session.update(snap);
  EXPECT_EQ(snap.steps.size(), 28u);
  EXPECT_EQ(snap.step_record.step, 27);
  training_events = 0;
  for (const core::RunEvent& e : snap.events) training_events += e.phase == core::Phase::kUpdate;
  EXPECT_EQ(training_events, 14u * 2);
}

// A viewer copies the run on its own thread while the fit trains (TSan runs this).
TEST(WatchedSession, AViewerOnAnotherThreadReadsWhileTheFitTrains) {
  PythonLikeRun run;
  core::TrainingSession session(*run.strategy, run.config, "Python");
  std::atomic<bool> done = false;
  std::size_t most_steps = 0;
  std::thread viewer([&] {
    core::SessionSnapshot snap;
    while (!done) {
      session.update(snap);
      most_steps = std::max(most_steps, snap.steps.size());
      std::this_thread::yield();
    }
    session.update(snap);
    most_steps = snap.steps.size();
  });
  run.fit(&session);
  done = true;
  viewer.join();
  EXPECT_EQ(most_steps, 14u);
}

}  // namespace
}  // namespace mirrorlab
