// What a training session is made of (training_session.h): the run's settings, how its devices
// are made, its faults, a checkpoint to go on from, and how its other workers run.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/nn/model_spec.h"
#include "core/session/other_workers.h"
#include "core/settings/run_settings.h"
#include "core/strategy/faults.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::core {

// A run to go on from (the GUI's Load checkpoint): read and checked already.
struct SessionResume {
  Checkpoint checkpoint;
  std::filesystem::path file;  // its state file, named in errors
};

struct SessionConfig {
  // The model, optimizer, loss scaling, all-reduce, batch, schedule and seed; the devices' count
  // and memory limits (logical_devices), which the GUI lets a user change; and the workers:
  // 1, this process trains alone; W > 1, as W workers of those devices each, the other workers
  // (core/session/other_workers.h) threads of this process as `mpirun -np W` would run them, or
  // the other processes of mpirun (other_workers below); the session's strategy, events and step
  // records are worker 0's. Not with faults or resume. The data is the session's own:
  // settings.train_examples is not applied again.
  RunSettings settings = [] {
    RunSettings s;
    s.devices.gpus = 2;
    return s;
  }();
  // Configures the registry with the devices; empty: CPU-backed virtual GPUs. The app passes
  // its choice of device kind (CPU-backed, CUDA logical or physical GPUs, SM split) here, so a
  // rebuilt session keeps it.
  std::function<void(vgpu::DeviceRegistry&, const std::vector<vgpu::LogicalDeviceConfiguration>&)>
      make_devices;
  // A model of the user's, layer by layer (keras.Sequential in Python); empty: settings.model.
  std::vector<LayerSpec> layers;
  FaultPlan faults;  // a straggler, a failing device, a NaN (core/strategy/faults.h)
  // Go on from this checkpoint instead of starting afresh (the settings must be its own:
  // config_for_checkpoint makes them so).
  std::shared_ptr<const SessionResume> resume;
  // How the other workers run: empty, as threads of this process (OtherWorkerThreads); the app
  // under mpirun gives the other processes (core/session/worker_followers.h).
  MakeOtherWorkers other_workers;
};

// The devices a config makes, one configuration each.
std::vector<vgpu::LogicalDeviceConfiguration> session_devices(const SessionConfig& config);

// `current` with what `checkpoint` fixed (model, optimizer, loss scaling, seeds, batch, epochs,
// step limit, all-reduce); the devices, their kind and the faults stay `current`'s.
SessionConfig config_for_checkpoint(const Checkpoint& checkpoint, SessionConfig current);

}  // namespace mirrorlab::core
