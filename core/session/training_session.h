// A training run that someone watches and steers: the GUI (and the terminal lessons) hold one.
//
// The session owns the devices, the MirroredStrategy, the run's EventStore and a background
// training thread that runs FitLoop one global step at a time. Commands (run, pause, one step,
// stop) only set state under a mutex and wake the thread; they never wait for a step. A viewer
// calls update() once per frame on its own SessionSnapshot: it holds the lock only to copy what
// is new (events, step and epoch records), so drawing never makes training wait, and training
// never waits for drawing (as in Tracy, where the View copies from the Worker).
//
// Threads: every public method may be called from any one viewer thread. strategy() and post()
// tasks belong to the training thread (see post()).
//
// Watching (the second constructor): the session shows a run that another thread drives, as
// Python's model.fit and custom loop drive theirs (mirrorlab.gui.watch). It owns no devices, no
// strategy and no training thread: it listens to the strategy it is given (events, the step
// record) and is told the fit's steps and epochs through watched_fit(). Its commands that would
// train, pause, step phase by phase, reconfigure, inject faults or save do nothing there; the
// snapshot's driven_by says who trains.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/io/dataset.h"
#include "core/session/other_workers.h"
#include "core/session/session_config.h"
#include "core/session/step_control.h"
#include "core/session/step_recorder.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/faults.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::core {

enum class SessionState {
  kPaused,    // between steps, waiting for run() or step()
  kRunning,   // stepping until pause()
  kFinished,  // all epochs (or max steps) done
  kFailed,    // a step threw: error() says what
  kStopped,   // stop() was called; the thread has ended or is ending
};
const char* to_string(SessionState state);  // "paused", "running", ...

// One global training step as the curves show it.
struct StepRecord {
  std::int64_t step = 0;  // 1-based count of global steps
  int epoch = 0;          // 1-based
  double loss = 0;        // mean over the step's global batch
  double accuracy = 0;
  std::int64_t examples = 0;
  double seconds = 0;  // time of the step itself
};

// What a viewer draws from. Keep one per viewer and pass it to TrainingSession::update() each
// frame: the lists only grow, so only new items are copied.
struct SessionSnapshot {
  SessionState state = SessionState::kPaused;
  std::string error;
  std::exception_ptr failure;              // what the failed step threw (kFailed)
  std::optional<NonFiniteValue> diverged;  // when the run failed because it diverged
  std::optional<LossGrowth> loss_growth;   // the loss grew far past its start (still finite)
  // What the last checkpoint saved or loaded, or why not; where a resumed run differs from the
  // one it goes on from; whether the faults asked for could be set (else why not).
  std::string checkpoint_note;
  std::vector<std::string> resume_changes;
  std::string faults_note;
  std::int64_t steps_done = 0;
  int epoch = 0, epochs = 0;
  std::int64_t step_in_epoch = 0, steps_per_epoch = 0;
  std::size_t global_batch = 0;
  int replicas_in_sync = 0;  // every worker's replicas
  // Empty when the run trains alone; else every worker, worker 0 first (whose devices are also
  // `devices`, and whose events, steps and records the rest of the snapshot holds).
  std::vector<WorkerStatus> workers;
  std::string workers_are;  // "threads of this process", "processes (MPI ranks)"
  // Steps after which worker 0's strategy found every worker's weights bit-identical (it
  // compares their fingerprints after every step, and a difference fails the step).
  std::int64_t workers_found_in_sync = 0;
  bool busy_with_task = false;  // a post()ed task (a measurement) holds the training thread
  bool stepping = false;        // training steps are running or asked for (Run, One step)
  std::vector<DeviceStatus> devices;
  std::vector<RunEvent> events;  // every event so far, in the order they were recorded
  std::vector<StepRecord> steps;
  std::vector<EpochLog> epoch_logs;
  // Within a step: whether steps pause at every phase boundary, where the replicas are held
  // (nullopt while they run or between steps), and the record of the current or last step.
  bool pausing_at_phases = false;
  std::optional<PausePoint> held_at;
  RecordedStep step_record;
  std::uint64_t step_record_version = 0;
  // "" while the session's own thread trains; else who drives the run it watches ("Python").
  std::string driven_by;
  // The optimizer's learning rate from now on: the settings' own, unless the driver of a watched
  // run has set another since (Python's optimizer.learning_rate, or a weights file it loaded).
  float learning_rate = 0;
  vgpu::TimePoint origin{};       // time 0 of the events
  const void* session = nullptr;  // the session it was filled from (a new one starts afresh)

  // The examples of a full global batch each replica takes (0 before any is known).
  std::size_t batch_per_replica() const {
    return replicas_in_sync > 0 ? global_batch / static_cast<std::size_t>(replicas_in_sync) : 0;
  }
  // Images per second over the last `window` steps (step time only), 0 if none.
  double images_per_second(std::size_t window = 20) const;
};

class TrainingSession {
 public:
  // Builds the devices and the strategy on the calling thread, so a bad configuration (a memory
  // limit too small for the model, an unknown algorithm) throws here, with the core's message;
  // then starts the training thread, paused. `data` must hold a non-empty training set.
  TrainingSession(std::shared_ptr<const FashionMnist> data, SessionConfig config);
  // Watches `strategy`, which `driven_by` ("Python") trains on another thread; made on that
  // thread between its steps, and ended there too (the destructor takes the session's listeners
  // off the strategy, which must outlive it). `config`: the run's settings, as shown.
  TrainingSession(MirroredStrategy& strategy, SessionConfig config, std::string driven_by);
  ~TrainingSession();  // stop(), then joins: returns after at most the step in progress
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  void run();    // keep stepping until pause()
  void pause();  // stop after the step in progress
  void step();   // one more global step, then pause
  // End the thread: after the step in progress, or at once for a step held within its phases.
  // Idempotent.
  void stop();
  // Within a step (core/session/step_control.h). next_phase(): pause at every phase boundary from
  // now on; if the replicas are held, release them to the next boundary, and if no step is under
  // way, start one (it stops after its split). run() and step() go back to whole steps: step()
  // lets a held step run to its end.
  void next_phase();
  void set_pausing_at_phases(bool on);
  // Which layer the recorder keeps gradient values of (from the next step on).
  void choose_recorded_layer(int layer) { recorder_.choose_layer(layer); }
  // Waits until the thread is between steps and no step is asked for or running (tests, the
  // end of a scripted GUI run). Returns false on timeout.
  bool wait_until_idle(double timeout_seconds);

  // Runs `task` on the training thread between two steps (training waits meanwhile; the viewer
  // does not). Tasks run in order; pending ones are dropped by stop(). The task may use
  // strategy() and devices(); it should return promptly once stopping() is true.
  void post(std::function<void()> task);
  bool stopping() const;

  void update(SessionSnapshot& snapshot) const;

  const SessionConfig& config() const { return config_; }
  // Whether another thread trains the run this session watches (the second constructor).
  bool watching() const { return !driven_by_.empty(); }
  // For the thread that drives a watched run: around each fit, and the fit's callback (its steps
  // and epochs become the snapshot's). A step run outside a fit (a custom loop) is seen only
  // through the strategy: its events and the step record.
  void watched_fit_began(int epochs, std::size_t global_batch);
  void watched_fit_ended(const std::string& error);  // "": it ended well (or was stopped)
  // After the driver has set the strategy's learning rate (MirroredStrategy::set_learning_rate).
  void watched_learning_rate_set(float learning_rate);
  FitCallback& watched_fit();
  // Any thread: whether the watched run's steps are recorded (the events, the step record), from
  // the next step on; on from the start. Off while no window shows them, so that the run pays
  // nothing for them then (the fit's steps and epochs are kept either way).
  void set_recording(bool on);
  // Asks for another device configuration while the devices are in use, as
  // tf.config.set_logical_device_configuration after the first use does: what the registry
  // answered ("Virtual devices cannot be modified after being initialized: ..."), or "" had it
  // accepted. The run goes on with the devices it has.
  std::string reconfigure_devices(const std::vector<vgpu::LogicalDeviceConfiguration>& configs);
  // Between steps (on the training thread): faults from the next step on (an empty plan: none),
  // and a checkpoint of the run so far written to `folder` (made if missing). What happened is
  // in the snapshot (faults_note, checkpoint_note).
  void set_faults(FaultPlan plan);
  void save_checkpoint(std::filesystem::path folder);
  const FashionMnist& data() const { return *data_; }
  const std::vector<vgpu::Device*>& devices() const { return devices_; }
  // For the training thread (post()ed tasks) or before the first step only.
  MirroredStrategy& strategy() { return *strategy_; }
  const MirroredStrategy& strategy() const { return *strategy_; }
  EventStore& events() { return events_; }

 private:
  void thread_main();
  void run_one_step();
  class WatchedFit;  // watched_session.cpp
  class Recording;   // watched_session.cpp

  std::shared_ptr<const FashionMnist> data_;
  SessionConfig config_;
  vgpu::DeviceRegistry registry_;
  std::vector<vgpu::Device*> devices_;
  std::unique_ptr<OtherWorkers> others_;  // before the strategy, which uses its group
  EventStore events_;
  StepController controller_;  // before the strategy, which points to them
  StepRecorder recorder_;
  std::unique_ptr<MirroredStrategy> own_strategy_;  // null when watching
  MirroredStrategy* strategy_ = nullptr;
  std::string driven_by_;                     // watching: who trains
  std::unique_ptr<FitCallback> watched_fit_;  // watching: a WatchedFit
  std::unique_ptr<StepListener> recording_;   // watching: a Recording, the strategy's listener
  std::size_t global_batch_ = 0;              // watching: the fit's (else the loop's)
  std::int64_t steps_per_epoch_ = 0;
  int epochs_ = 0;
  // The settings', or the one the driver set since (config_ is made first: declared before).
  float learning_rate_ = config_.settings.optimizer.learning_rate;
  std::unique_ptr<FitLoop> loop_;  // used by the training thread only
  FaultInjector faults_;           // the training thread's, like the strategy
  CheckpointConfig checkpoint_config_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the training thread waits on it for commands
  std::condition_variable idle_;  // wait_until_idle() waits on it
  SessionState state_ = SessionState::kPaused;
  bool stop_ = false;
  bool in_step_ = false;
  std::int64_t steps_requested_ = 0;
  std::vector<std::function<void()>> tasks_;
  bool in_task_ = false;
  std::string error_;
  std::exception_ptr failure_;
  std::optional<NonFiniteValue> diverged_;
  std::optional<LossGrowth> loss_growth_;
  std::string checkpoint_note_, faults_note_;
  std::vector<std::string> resume_changes_;
  std::int64_t steps_done_ = 0;
  std::uint64_t fingerprint_ = 0;  // worker 0's replica 0 after the last step (several workers)
  std::int64_t workers_found_in_sync_ = 0;
  std::vector<StepRecord> steps_;
  std::vector<EpochLog> epoch_logs_;
  int epoch_ = 0;
  std::int64_t step_in_epoch_ = 0;
  std::thread thread_;  // last: starts once everything above is built
};

}  // namespace mirrorlab::core
