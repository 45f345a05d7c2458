#include "core/session/other_worker_threads.h"

#include "core/session/session_config.h"

namespace mirrorlab::core {

struct OtherWorkerThreads::Worker {
  int index = 0;
  std::string tf_config;
  vgpu::DeviceRegistry registry;
  std::vector<vgpu::Device*> devices;
  std::unique_ptr<MirroredStrategy> strategy;
  std::unique_ptr<FitLoop> loop;
  // Under OtherWorkerThreads::mutex_.
  bool built = false;
  std::exception_ptr build_error;
  std::int64_t steps_asked = 0, steps_ended = 0;
  std::string step_error;
  bool only_released = false;  // its step ended because another worker failed
  bool stop = false;
  std::uint64_t fingerprint = 0;  // its replica 0's weights after its last step
  std::thread thread;             // last: starts once everything above is built
};

OtherWorkerThreads::OtherWorkerThreads(int workers, std::shared_ptr<const FashionMnist> data,
                                       const SessionConfig& config)
    : group_(workers) {
  for (int w = 1; w < workers; ++w) {
    auto worker = std::make_unique<Worker>();
    worker->index = w;
    worker->tf_config = vgpu::tf_config(group_.worker(w));
    Worker* raw = worker.get();
    others_.push_back(std::move(worker));
    raw->thread = std::thread([this, raw, data, &config] { run(*raw, data, config); });
  }
}

OtherWorkerThreads::~OtherWorkerThreads() {
  group_.abort("the run is closing");
  {
    std::lock_guard lock(mutex_);
    for (auto& w : others_) w->stop = true;
  }
  changed_.notify_all();
  for (auto& w : others_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void OtherWorkerThreads::run(Worker& w, std::shared_ptr<const FashionMnist> data,
                             const SessionConfig& config) {
  std::exception_ptr failed;
  try {
    if (config.make_devices) {
      config.make_devices(w.registry, session_devices(config));
    } else {
      w.registry.set_logical_device_configuration(session_devices(config));
    }
    w.devices = w.registry.logical_devices();
    w.strategy = std::make_unique<MirroredStrategy>(w.devices, strategy_options(config.settings),
                                                    nullptr, &group_.worker(w.index));
    w.loop = std::make_unique<FitLoop>(*w.strategy, data->train, &data->test,
                                       fit_options(config.settings));
  } catch (...) {
    failed = std::current_exception();
    group_.abort("worker " + std::to_string(w.index) + " could not start: " + error_text(failed));
  }
  {
    std::lock_guard lock(mutex_);
    w.built = true;
    w.build_error = failed;
  }
  changed_.notify_all();
  if (failed) return;
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return w.stop || w.steps_asked > w.steps_ended; });
    if (w.stop) return;
    lock.unlock();
    std::string error;
    bool released = false;
    try {
      if (!w.loop->done()) w.loop->step();
    } catch (const vgpu::WorkersAborted& e) {
      error = e.what();
      released = true;
    } catch (const std::exception& e) {
      error = e.what();
      // Its step failed: the others must not wait for it in the step's next exchange.
      group_.abort("worker " + std::to_string(w.index) + " failed: " + error);
    }
    lock.lock();
    w.step_error = error;
    w.only_released = released;
    ++w.steps_ended;
    changed_.notify_all();
  }
}

void OtherWorkerThreads::wait_built(std::exception_ptr mine) {
  if (mine) group_.abort("worker 0 could not start: " + error_text(mine));
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& w : others_) {
      if (!w->built) return false;
    }
    return true;
  });
  // Worker 0's own error first; else the first worker that failed of its own.
  if (mine) {
    try {
      std::rethrow_exception(mine);
    } catch (const vgpu::WorkersAborted&) {
      // It only stopped waiting: the one that failed is said below.
    } catch (...) {
      throw;
    }
  }
  for (const auto& w : others_) {
    if (w->build_error) {
      try {
        std::rethrow_exception(w->build_error);
      } catch (const vgpu::WorkersAborted&) {
      } catch (const std::exception& e) {
        throw std::runtime_error("worker " + std::to_string(w->index) + ": " + e.what());
      }
    }
  }
  if (mine) std::rethrow_exception(mine);
}

void OtherWorkerThreads::start_step() {
  {
    std::lock_guard lock(mutex_);
    for (auto& w : others_) ++w->steps_asked;
  }
  changed_.notify_all();
}

std::string OtherWorkerThreads::finish_step() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& w : others_) {
      if (w->build_error == nullptr && w->steps_ended < w->steps_asked) return false;
    }
    return true;
  });
  std::string released;
  for (const auto& w : others_) {
    // Its thread waits for the next step: its strategy is this thread's to read now.
    if (w->strategy) w->fingerprint = w->strategy->replica(0).last_fingerprint();
    if (w->step_error.empty()) continue;
    const std::string said = "worker " + std::to_string(w->index) + ": " + w->step_error;
    if (!w->only_released) return said;
    if (released.empty()) released = said;
  }
  return released;
}

WorkerStatus OtherWorkerThreads::status(int w) const {
  const Worker& worker = *others_.at(static_cast<std::size_t>(w - 1));
  WorkerStatus status;
  status.tf_config = worker.tf_config;
  status.place = "thread " + std::to_string(w) + " of this process";
  status.devices = device_statuses(worker.devices);
  std::lock_guard lock(mutex_);
  status.fingerprint = worker.fingerprint;
  return status;
}

const std::vector<vgpu::Device*>& OtherWorkerThreads::devices(int w) const {
  return others_.at(static_cast<std::size_t>(w - 1))->devices;
}

}  // namespace mirrorlab::core
