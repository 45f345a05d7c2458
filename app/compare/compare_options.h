// `mirrorlab compare`'s options, for the command (compare_command.h) and the parts it runs
// (compare_fit.h: fitting, checking and replaying the timing model).
#pragma once

#include <cstdint>
#include <string>

#include "app/compare/compare_step.h"
#include "app/flags/device_flags.h"
#include "app/flags/sweep_flags.h"

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

// Says `problem` on stderr as the command's bad input, pointing at --help; returns 2.
int compare_bad_input(const std::string& problem);

}  // namespace mirrorlab::app
