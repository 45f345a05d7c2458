#include "core/session/training_session.h"

#include <chrono>
#include <exception>
#include <utility>

#include "core/checkpoint/checkpoint_folder.h"
#include "core/checkpoint/run_checkpoint.h"
#include "core/session/other_worker_threads.h"

namespace mirrorlab::core {

const char* to_string(SessionState state) {
  switch (state) {
    case SessionState::kPaused:
      return "paused";
    case SessionState::kRunning:
      return "running";
    case SessionState::kFinished:
      return "finished";
    case SessionState::kFailed:
      return "failed";
    case SessionState::kStopped:
      return "stopped";
  }
  return "unknown";
}

double SessionSnapshot::images_per_second(std::size_t window) const {
  double seconds = 0;
  std::int64_t examples = 0;
  for (std::size_t i = steps.size() > window ? steps.size() - window : 0; i < steps.size(); ++i) {
    seconds += steps[i].seconds;
    examples += steps[i].examples;
  }
  return seconds > 0 ? static_cast<double>(examples) / seconds : 0.0;
}

TrainingSession::TrainingSession(std::shared_ptr<const FashionMnist> data, SessionConfig config)
    : data_(std::move(data)), config_(std::move(config)) {
  if (config_.make_devices) {
    config_.make_devices(registry_, session_devices(config_));
  } else {
    registry_.set_logical_device_configuration(session_devices(config_));
  }
  devices_ = registry_.logical_devices();
  StrategyOptions strategy_settings = strategy_options(config_.settings);
  strategy_settings.layers = config_.layers;
  if (config_.settings.workers > 1) {
    // What a run of several workers does not do yet, as `mirrorlab train` under mpirun refuses.
    if (!config_.faults.empty() || config_.resume) {
      throw std::invalid_argument(
          "faults and checkpoints are not built for several workers: train with one worker");
    }
    others_ = config_.other_workers
                  ? config_.other_workers(data_, config_)
                  : std::make_unique<OtherWorkerThreads>(config_.settings.workers, data_, config_);
    std::exception_ptr failed;
    try {
      own_strategy_ = std::make_unique<MirroredStrategy>(devices_, strategy_settings, &events_,
                                                         &others_->worker_0());
      strategy_ = own_strategy_.get();
    } catch (...) {
      failed = std::current_exception();
    }
    others_->wait_built(failed);  // throws the first error of any worker
  } else {
    own_strategy_ = std::make_unique<MirroredStrategy>(devices_, strategy_settings, &events_);
    strategy_ = own_strategy_.get();
  }
  strategy_->add_listener(&recorder_);
  strategy_->add_listener(&controller_);
  loop_ = std::make_unique<FitLoop>(*strategy_, data_->train, &data_->test,
                                    fit_options(config_.settings));
  // Before the thread starts: a plan or a checkpoint that cannot be is an error of the
  // configuration (the window shows it), and nothing of it is loaded.
  if (!config_.faults.empty()) {
    faults_.attach(*strategy_, config_.faults);
    faults_note_ = "From step 1: " + config_.faults.describe();
  }
  checkpoint_config_ =
      checkpoint_config(config_.settings, *strategy_, *loop_, dataset_crc32(data_->train));
  if (config_.resume) {
    const SessionResume& r = *config_.resume;
    restore_checkpoint(r.checkpoint, r.file, checkpoint_config_, *strategy_, *loop_);
    const History& h = loop_->history();
    epoch_logs_ = h.epochs;
    epoch_ = loop_->epoch();
    step_in_epoch_ = loop_->step_in_epoch();
    steps_done_ = h.steps;
    loss_growth_ = h.loss_growth;
    if (loop_->done()) state_ = SessionState::kFinished;
    resume_changes_ = checkpoint_changes(r.checkpoint.config, checkpoint_config_);
    checkpoint_note_ = "Loaded " + r.file.string() + ": step " + std::to_string(h.steps);
  }
  thread_ = std::thread([this] { thread_main(); });
}

void TrainingSession::set_faults(FaultPlan plan) {
  if (watching()) {
    std::lock_guard lock(mutex_);
    faults_note_ = "These faults cannot happen: the run is trained from " + driven_by_ +
                   ", and faults are set where a run is made (mirrorlab gui, mirrorlab train)";
    return;
  }
  post([this, plan = std::move(plan)] {
    std::string note;
    try {
      if (others_) {
        note = "These faults cannot happen: faults are not built for several workers";
      } else if (plan.empty()) {
        faults_.detach();
      } else {
        faults_.attach(*strategy_, plan);
        note = "From step " + std::to_string(strategy_->steps_done() + 1) + ": " + plan.describe();
      }
    } catch (const std::invalid_argument& e) {
      note = std::string("These faults cannot happen: ") + e.what();
    }
    std::lock_guard lock(mutex_);
    faults_note_ = note;
  });
}

void TrainingSession::save_checkpoint(std::filesystem::path folder) {
  if (watching()) {
    std::lock_guard lock(mutex_);
    checkpoint_note_ = "Not saved: the run is trained from " + driven_by_ + ", which keeps it";
    return;
  }
  post([this, folder = std::move(folder)] {
    std::string note;
    try {
      if (others_) throw std::invalid_argument("checkpoints are not built for several workers");
      CheckpointFolder checkpoints(folder);
      checkpoints.prepare();
      const CheckpointEntry saved =
          checkpoints.save(capture_checkpoint(*strategy_, *loop_, checkpoint_config_), 0);
      note = "Saved " + saved.state.string() + " (step " + std::to_string(saved.step) + ")";
    } catch (const std::exception& e) {  // OutputFileError: a folder that cannot be written
      note = std::string("Not saved: ") + e.what();
    }
    std::lock_guard lock(mutex_);
    checkpoint_note_ = note;
  });
}

TrainingSession::~TrainingSession() {
  stop();
  if (thread_.joinable()) thread_.join();
  // The driving thread, between its steps: the strategy goes on without us.
  if (watching()) strategy_->remove_listener(recording_.get());
}

void TrainingSession::run() {
  if (watching()) return;
  controller_.run_freely();
  std::lock_guard lock(mutex_);
  if (state_ != SessionState::kPaused) return;
  state_ = SessionState::kRunning;
  wake_.notify_all();
}

void TrainingSession::pause() {
  if (watching()) return;
  std::lock_guard lock(mutex_);
  if (state_ == SessionState::kRunning) state_ = SessionState::kPaused;
  steps_requested_ = 0;
}

void TrainingSession::step() {
  if (watching()) return;
  controller_.run_freely();  // a step held within its phases runs to its end
  std::lock_guard lock(mutex_);
  if (state_ == SessionState::kRunning) {
    // The step in progress is the one step: pause after it.
    state_ = SessionState::kPaused;
    return;
  }
  if (state_ != SessionState::kPaused) return;
  ++steps_requested_;
  wake_.notify_all();
}

void TrainingSession::next_phase() {
  if (watching()) return;
  controller_.pause_at_phases(true);
  if (controller_.advance()) return;  // the replicas were held: on to the next boundary
  std::lock_guard lock(mutex_);
  // No step is held. Whether a step pauses is fixed when it starts, so a step under way ends
  // freely and the next one pauses; start one only when nothing runs.
  if (state_ == SessionState::kPaused && !in_step_ && steps_requested_ == 0) {
    ++steps_requested_;
    wake_.notify_all();
  } else if (state_ == SessionState::kRunning) {
    state_ = SessionState::kPaused;
  }
}

void TrainingSession::set_pausing_at_phases(bool on) {
  if (watching()) return;
  if (on) {
    controller_.pause_at_phases(true);
  } else {
    controller_.run_freely();
  }
}

void TrainingSession::stop() {
  if (others_ && !others_->can_leave_a_step()) {
    // The other workers wait inside this step's collectives, where nothing can call them off:
    // a held step runs to its end (a moment), and the session stops after it.
    controller_.run_freely();
  } else {
    controller_.stop();  // a step held at a boundary ends now (StepStopped), not at the next click
  }
  std::lock_guard lock(mutex_);
  stop_ = true;
  tasks_.clear();
  if (state_ == SessionState::kRunning || state_ == SessionState::kPaused) {
    state_ = SessionState::kStopped;
  }
  wake_.notify_all();
  idle_.notify_all();
}

bool TrainingSession::stopping() const {
  std::lock_guard lock(mutex_);
  return stop_;
}

bool TrainingSession::wait_until_idle(double timeout_seconds) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), [this] {
    return stop_ || watching() ||
           (!in_step_ && !in_task_ && tasks_.empty() && steps_requested_ == 0 &&
            state_ != SessionState::kRunning);
  });
}

void TrainingSession::post(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stop_ || watching()) return;
  tasks_.push_back(std::move(task));
  wake_.notify_all();
}

void TrainingSession::thread_main() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] {
      return stop_ || !tasks_.empty() || state_ == SessionState::kRunning || steps_requested_ > 0;
    });
    if (stop_) break;
    if (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front());
      tasks_.erase(tasks_.begin());
      in_task_ = true;
      lock.unlock();
      task();  // reports its own errors; see post()
      lock.lock();
      in_task_ = false;
    } else {
      if (steps_requested_ > 0) --steps_requested_;
      in_step_ = true;
      lock.unlock();
      run_one_step();
      lock.lock();
      in_step_ = false;
    }
    idle_.notify_all();
  }
  idle_.notify_all();
}

void TrainingSession::run_one_step() {
  StepRecord record;
  std::string error;
  std::exception_ptr failure;
  // With several workers, every other worker takes the step too; one that fails releases the
  // others from their waits, and the run says what failed first (not a worker that only stopped
  // waiting for it).
  std::string others_error;
  const auto settle_others = [&](bool failed) {
    if (!others_) return;
    if (failed) others_->abort("worker 0's step failed or was stopped");
    others_error = others_->finish_step();
  };
  try {
    if (others_) others_->start_step();  // telling another process may fail (its transport)
    const LossStats stats = loop_->step();
    settle_others(false);
    if (!others_error.empty()) throw std::runtime_error(others_error);
    const Metrics m = Metrics::from(stats);
    record.step = loop_->history().steps;
    record.epoch = loop_->epoch();
    record.loss = m.loss;
    record.accuracy = m.accuracy;
    record.examples = stats.count;
    record.seconds = loop_->last_step_seconds();
  } catch (const StepStopped&) {
    settle_others(true);
    return;  // stop() ended a held step: a clean stop, not a failure
  } catch (const DeviceFailed& e) {
    settle_others(true);
    // As a GPU lost mid-step: the step did not count and the run ends there (a checkpoint saved
    // before can be loaded again).
    loop_->stop(StopReason::kFailed);
    std::lock_guard lock(mutex_);
    error_ = e.what();
    failure_ = std::current_exception();
    state_ = SessionState::kFailed;
    steps_requested_ = 0;
    return;
  } catch (const DivergedError& e) {
    settle_others(true);
    // The step did not count: the weights are those of the step before; the curves stop there.
    loop_->stop(StopReason::kDiverged);
    std::lock_guard lock(mutex_);
    error_ = e.what();
    failure_ = std::current_exception();
    diverged_ = e.where();
    state_ = SessionState::kFailed;
    steps_requested_ = 0;
    return;
  } catch (const std::exception& e) {
    error = e.what();
    failure = std::current_exception();
    if (others_ && others_error.empty()) {
      settle_others(true);
      // Worker 0 may only have stopped waiting for the worker that failed: name that one.
      if (!others_error.empty() && dynamic_cast<const vgpu::WorkersAborted*>(&e) != nullptr) {
        error = others_error;
      }
    }
  }
  std::lock_guard lock(mutex_);
  if (!error.empty()) {
    error_ = "training step " + std::to_string(steps_done_ + 1) + " failed: " + error;
    failure_ = failure;
    state_ = SessionState::kFailed;
    steps_requested_ = 0;
    return;
  }
  loss_growth_ = loop_->history().loss_growth;
  steps_done_ = loop_->history().steps;
  if (others_) {
    fingerprint_ = strategy_->replica(0).last_fingerprint();
    workers_found_in_sync_ = strategy_->workers_found_in_sync();
  }
  steps_.push_back(record);
  const std::vector<EpochLog>& epochs = loop_->history().epochs;
  for (std::size_t i = epoch_logs_.size(); i < epochs.size(); ++i) epoch_logs_.push_back(epochs[i]);
  epoch_ = loop_->epoch();
  step_in_epoch_ = loop_->step_in_epoch();
  if (loop_->done()) {
    state_ = SessionState::kFinished;
    steps_requested_ = 0;
  }
}

void TrainingSession::update(SessionSnapshot& s) const {
  if (s.session != this) {
    s = SessionSnapshot{};
    s.session = this;
    s.origin = events_.origin();
    s.driven_by = driven_by_;
    if (loop_) {
      s.epochs = config_.settings.epochs;
      s.steps_per_epoch = loop_->steps_per_epoch();
      s.global_batch = loop_->global_batch();
    }
    s.replicas_in_sync = strategy_->num_replicas_in_sync();  // fixed once built
    s.devices = device_statuses(devices_);
    if (others_) {
      s.workers_are = others_->what_workers_are();
      WorkerStatus mine;
      mine.tf_config = vgpu::tf_config(others_->worker_0());
      const vgpu::WorkerPlace& place = others_->worker_0().places().at(0);
      mine.place = "pid " + std::to_string(place.pid) + " on " + place.host;
      mine.devices = s.devices;
      s.workers.push_back(mine);
    }
  }
  {
    std::lock_guard lock(mutex_);
    s.state = state_;
    s.error = error_;
    s.failure = failure_;
    s.diverged = diverged_;
    s.loss_growth = loss_growth_;
    s.busy_with_task = in_task_ || !tasks_.empty();
    s.stepping = state_ == SessionState::kRunning || in_step_ || steps_requested_ > 0;
    s.epoch = epoch_;
    s.step_in_epoch = step_in_epoch_;
    s.steps_done = steps_done_;
    s.learning_rate = learning_rate_;
    if (watching()) {  // each fit brings its own
      s.epochs = epochs_;
      s.steps_per_epoch = steps_per_epoch_;
      s.global_batch = global_batch_;
    }
    s.checkpoint_note = checkpoint_note_;
    s.resume_changes = resume_changes_;
    s.faults_note = faults_note_;
    s.workers_found_in_sync = workers_found_in_sync_;
    if (!s.workers.empty()) s.workers[0].fingerprint = fingerprint_;
    s.steps.insert(s.steps.end(), steps_.begin() + static_cast<std::ptrdiff_t>(s.steps.size()),
                   steps_.end());
    s.epoch_logs.insert(s.epoch_logs.end(),
                        epoch_logs_.begin() + static_cast<std::ptrdiff_t>(s.epoch_logs.size()),
                        epoch_logs_.end());
  }
  events_.copy_since(s.events.size(), s.events);
  s.pausing_at_phases = controller_.pausing_at_phases();
  s.held_at = controller_.paused_at();
  recorder_.snapshot_if_newer(s.step_record_version, s.step_record);
  read_memory(devices_, s.devices);
  if (others_) {
    read_memory(devices_, s.workers[0].devices);
    s.workers.resize(1);
    for (int w = 1; w < others_->size(); ++w) s.workers.push_back(others_->status(w));
  }
}

std::string TrainingSession::reconfigure_devices(
    const std::vector<vgpu::LogicalDeviceConfiguration>& configs) {
  // The registry refuses before it changes anything once devices exist, which they do from the
  // constructor on; it reads only what the constructor wrote, so no lock is needed.
  if (watching()) {
    return "the devices belong to the run trained from " + driven_by_ +
           ": configure them there, before its first strategy";
  }
  try {
    registry_.set_logical_device_configuration(configs);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace mirrorlab::core
