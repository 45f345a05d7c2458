// The fault flags of every command that trains (train, gui), each a comma-separated list:
//   --slow-device /gpu:1=3          that device computes 3 times slower (a straggler)
//   --fail-device /gpu:1@40[:PHASE] it fails during global step 40, in the all-reduce (the
//                                   middle of it) or PHASE: split, forward, backward, all-reduce
//   --nan-at /gpu:1@40              a NaN appears in its gradient in step 40
// What they do: core/strategy/faults.h. Parsed strictly through app/flags; the devices and steps
// are checked against the run once its device count and length are known.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "app/flags/cli_declarations.h"
#include "core/strategy/faults.h"

namespace mirrorlab::app {

// One entry of each flag: "" or what is wrong with it.
std::string parse_slow_device(std::string_view text, core::SlowDevice* out);
std::string parse_device_failure(std::string_view text, core::DeviceFailure* out);
std::string parse_nan_at(std::string_view text, core::NanInGradient* out);

void add_fault_flags(CLI::App* command, core::FaultPlan& plan);

// "" when every fault names one of `devices` devices, else the sentence naming the flag.
std::string check_fault_devices(const core::FaultPlan& plan, int devices);
// "" when every fault's step is one the run makes: after `first_step` (a resumed run's
// checkpoint), up to `last_step`; else the sentence naming the flag.
std::string check_fault_steps(const core::FaultPlan& plan, std::int64_t first_step,
                              std::int64_t last_step);

}  // namespace mirrorlab::app
