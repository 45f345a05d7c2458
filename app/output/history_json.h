// The --history file: what a run did, as JSON, for plots, lessons and the docs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/strategy/events/run_events.h"
#include "core/strategy/fit.h"
#include "nlohmann/json.hpp"

namespace mirrorlab::app {

struct RunSummary {
  nlohmann::json config;  // the options the run was started with
  const core::History* history = nullptr;
  core::Metrics test;     // final evaluation on the test set
  double weights_l2 = 0;  // L2 norm of every final weight of replica 0
  std::vector<std::string> device_names;
  std::vector<core::PhaseTotals> phase_seconds;  // per device
  std::vector<std::size_t> peak_memory_bytes;    // per device
  // Why the run ended (history->stop_reason) in words, when it ended early: the divergence, the
  // signal. "" for a run that finished.
  std::string stop_message;
  std::vector<std::string> warnings;  // as printed (the loss growing far past its start)
  // With several workers (mpirun): each worker's host, pid, TF_CONFIG and devices (their phase
  // seconds and peak memory), worker 0 first; empty (and left out) for one process.
  nlohmann::json workers = nlohmann::json::array();
};

// The history as JSON: "stopped": {"reason", "after_step", "message"} says how the run ended
// ("finished", "max_steps", "interrupted", "diverged", "failed"). Write it with OutputFile.
nlohmann::json to_json(const RunSummary& summary);

}  // namespace mirrorlab::app
