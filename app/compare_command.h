// `mirrorlab compare`: the timing model (timing/) against measurement on the devices at hand, and
// its prediction on any topology. `--fit` measures this machine (the memory's copy and add
// bandwidth by size, all-reduces of small sizes for the step latency) and saves the fitted
// topology; then every size from -b to -e is measured and put beside the prediction.
// `--topology ID` predicts every algorithm, NCCL's among them, on a preset without measuring.
// `--record FILE` keeps what was measured, and `--replay FILE` fits or checks again from it.
// Both end with the training step's table (compare_step.h): one step of --model on 1 to N
// devices, the speed-up, and where another device stops paying for itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "app/compare_step.h"
#include "app/device_flags.h"
#include "app/sweep_flags.h"

namespace mirrorlab::app {

struct CompareOptions {
  DeviceFlags devices;
  bool fit = false;
  std::string output;    // --fit: where to save (default: timing::fitted_topology_file())
  std::string topology;  // a preset's id or a file: predict there, measure nothing
  std::string fitted;    // the fitted topology to check (default: this machine's)
  std::string record;    // where to save what is measured (vgpu/fit_recording.h)
  std::string replay;    // a recording to fit or check again from, measuring nothing
  SweepFlags sweep{std::uint64_t{1} << 20, std::uint64_t{256} << 20, 2.0, 10, 2};
  int rounds = 3;
  StepFlags step;  // the training step's table: model, batch per replica, where the compute
                   // comes from
};

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);
int run_compare(const CompareOptions& options);
// Says `problem` on stderr as the command's bad input, pointing at --help; returns 2.
int compare_bad_input(const std::string& problem);

}  // namespace mirrorlab::app
