// The live values a lesson can ask about and check: numbers read from the run as it stands (the
// session's snapshot and the record of its current or last step), by name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/session/training_session.h"
#include "lessons/player/model_values.h"

namespace mirrorlab::lessons {

// What a live value is read from.
struct LiveRun {
  const core::SessionSnapshot* snapshot = nullptr;
  // How far the weights of replica 0 are from those of one device trained on the same batches
  // (largest absolute difference); nullopt when the lesson keeps no such reference.
  std::optional<double> distance_to_one_device;
  // The same against one worker of every replica the run has (its gpus x workers devices in one
  // process); nullopt when the lesson keeps no such reference.
  std::optional<double> distance_to_one_worker;
  bool run_failed = false;  // the run could not be built, or a step failed
  // Whether the last `reconfigure_devices` of this run was refused; nullopt: none was asked.
  std::optional<bool> reconfigure_refused;
  core::LossScaling loss_scaling = core::LossScaling::kReplicaMean;  // the run's
  // Model values: the step's machine, and how many of its GPUs (0: all).
  const ModelContext* model = nullptr;
  int devices = 0;
};

struct LiveValue {
  std::string_view name;
  std::string_view means;    // for `lesson check` and the README: what it measures
  bool per_replica = false;  // needs `replica = N`
  // The value now; nullopt when the run has not produced it yet (no step recorded).
  std::optional<double> (*read)(const LiveRun& run, int replica);
  // Read from the timing model on the machine a step names (`topology`), on `devices = N` of its
  // GPUs: needs a `topology` at or before the step that asks.
  bool model = false;
  // A model value of the training step (a replica's compute, a step, the speed-up, the devices
  // that pay) rather than of one all-reduce: the GUI's Compare panel shows the step's table.
  bool training_step = false;
};

const std::vector<LiveValue>& live_values();
const LiveValue* find_live_value(std::string_view name);
std::string live_value_names();  // "replicas, global_batch, ..." for error messages

}  // namespace mirrorlab::lessons
