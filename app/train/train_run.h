// One `mirrorlab train` run as it is made, phase by phase (run_train in train_command.cpp runs
// the phases in order): what each phase makes, for the phases after it. Members are destroyed
// in the reverse order: the faults and the strategy before the devices and the workers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/flags/train_flags.h"
#include "app/output/output_files.h"
#include "app/train/run_launch.h"
#include "app/train/train_checkpoints.h"
#include "core/strategy/events/run_events.h"
#include "core/strategy/faults.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/cuda/gpu_work_counts.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::app {

struct TrainRun {
  explicit TrainRun(const TrainOptions& options) : o(options) {}

  TrainOptions o;  // a resumed run's with the settings its checkpoint fixed
  RunLaunch launch{"train"};
  std::optional<ResumePoint> resume;
  int gpus = 0;         // devices per worker
  OutputFiles outputs;  // worker 0 writes the files
  TrainCheckpoints checkpoints;
  vgpu::TimePoint trace_origin;  // met by every worker at the start
  vgpu::DeviceRegistry registry;
  std::vector<vgpu::Device*> devices;
  core::EventStore events;
  std::unique_ptr<vgpu::WorkerGroup> on_gpus;  // NCCL across the workers' processes
  std::unique_ptr<core::MirroredStrategy> strategy;
  core::FaultInjector faults;
  std::vector<std::string> warnings;      // said during the run, kept in the history
  std::vector<std::string> write_errors;  // the history or the trace not written
  int checkpoints_not_saved = 0;          // each said as it failed
  // What the process had asked of its GPUs before the first step (gpu_work_counts.h), and the
  // steps made before it (by the run resumed).
  vgpu::GpuWorkTable gpu_work_before{};
  std::int64_t steps_before = 0;
};

// The end of a run, as it ended.
struct RunEnd {
  int status = 0;            // 0, 1 (diverged or failed) or 128 + signal
  std::string stop_message;  // why it ended early, in words, also in the history
  bool left = false;         // this worker left at once (the others may wait in a collective)
};

}  // namespace mirrorlab::app
