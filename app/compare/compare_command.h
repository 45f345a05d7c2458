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

#include "app/compare/compare_options.h"
#include "app/flags/cli_declarations.h"

namespace mirrorlab::app {

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);
int run_compare(const CompareOptions& options);

}  // namespace mirrorlab::app
