#include "app/flags/fault_flags.h"

#include <cctype>

#include "CLI/CLI.hpp"
#include "app/flags/flags.h"
#include "core/session/text/console_text.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::app {
namespace {

constexpr std::int64_t kMostDevices = 64;                  // --gpus' limit
constexpr std::int64_t kLastStep = std::int64_t{1} << 40;  // --max-steps' limit

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// "/gpu:N" (any case) into *device.
std::string parse_device(std::string_view text, std::string_view example, int* device) {
  const std::string_view prefix = "/gpu:";
  bool ok = text.size() > prefix.size();
  for (std::size_t i = 0; ok && i < prefix.size(); ++i) {
    ok = std::tolower(static_cast<unsigned char>(text[i])) == prefix[i];
  }
  const std::string give = "write the device as /gpu:N, e.g. " + std::string(example);
  if (!ok) return quoted(text) + " is not a device: " + give;
  std::int64_t n = 0;
  if (!parse_whole_number(text.substr(prefix.size()), 0, kMostDevices - 1, &n).empty()) {
    return quoted(text) + " is not a device: " + give + " (N from 0 to " +
           std::to_string(kMostDevices - 1) + ")";
  }
  *device = static_cast<int>(n);
  return "";
}

// "DEVICE@STEP" into the two; `rest` gets what follows the step after a ':'.
std::string parse_device_at_step(std::string_view text, std::string_view example, int* device,
                                 std::int64_t* step, std::string_view* rest) {
  const std::size_t at = text.find('@');
  if (at == std::string_view::npos) {
    return quoted(text) + " does not say when: write DEVICE@STEP, e.g. " + std::string(example);
  }
  if (std::string p = parse_device(text.substr(0, at), example, device); !p.empty()) return p;
  std::string_view step_text = text.substr(at + 1);
  const std::size_t colon = step_text.find(':');
  if (rest != nullptr && colon != std::string_view::npos) {
    *rest = step_text.substr(colon + 1);
    step_text = step_text.substr(0, colon);
  }
  if (std::string p = parse_whole_number(step_text, 1, kLastStep, step); !p.empty()) {
    return "the step in " + quoted(text) + ": " + p + " (the global training step, from 1)";
  }
  return "";
}

// A list flag whose every entry `parse` reads into one more of `faults`.
template <class Fault>
void add_fault_list(CLI::App* command, const std::string& name, const std::string& type,
                    const std::string& help, std::string (*parse)(std::string_view, Fault*),
                    std::vector<Fault>& faults) {
  add_entry_list_flag(
      command, name, type, help,
      [parse](std::string_view entry) {
        Fault f;
        return parse(entry, &f);
      },
      [parse, &faults](const std::vector<std::string>& entries) {
        for (const std::string& entry : entries) {
          Fault f;
          parse(entry, &f);
          faults.push_back(f);
        }
      });
}

std::string device_range(int devices) {
  return devices == 1 ? "1 device (/gpu:0)"
                      : std::to_string(devices) +
                            " devices (/gpu:0 to /gpu:" + std::to_string(devices - 1) + ")";
}

}  // namespace

std::string parse_slow_device(std::string_view text, core::SlowDevice* out) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return quoted(text) + " does not say how much slower: write DEVICE=FACTOR, e.g. /gpu:1=3";
  }
  if (std::string p = parse_device(text.substr(0, eq), "/gpu:1=3", &out->device); !p.empty()) {
    return p;
  }
  if (std::string p = parse_real(text.substr(eq + 1), 1, core::Replica::kMaxSlowdown, &out->factor);
      !p.empty()) {
    return "the factor in " + quoted(text) + ": " + p + " (how many times slower it computes)";
  }
  return "";
}

std::string parse_device_failure(std::string_view text, core::DeviceFailure* out) {
  std::string_view phase;
  if (std::string p = parse_device_at_step(text, "/gpu:1@40", &out->device, &out->step, &phase);
      !p.empty()) {
    return p;
  }
  out->phase = core::FailurePhase::kAllReduce;
  out->all_reduce_step = -1;
  if (phase.empty()) return "";
  try {
    out->phase = core::parse_failure_phase(phase);
  } catch (const std::invalid_argument& e) {
    return "in " + quoted(text) + ", " + e.what() + " (e.g. /gpu:1@40:forward)";
  }
  return "";
}

std::string parse_nan_at(std::string_view text, core::NanInGradient* out) {
  return parse_device_at_step(text, "/gpu:1@40", &out->device, &out->step, nullptr);
}

void add_fault_flags(CLI::App* command, core::FaultPlan& plan) {
  add_fault_list(
      command, "--slow-device", "DEVICE=FACTOR[,...]",
      "A straggler: that device computes FACTOR times slower (1 to 1000), so every other replica "
      "waits for it at the all-reduce (the timeline's wait). CPU-backed devices only",
      parse_slow_device, plan.slow);
  add_fault_list(
      command, "--fail-device", "DEVICE@STEP[:PHASE][,...]",
      "That device fails during that global step: an error raised on its stream in the middle of "
      "the all-reduce, or as its split, forward or backward pass ends (:PHASE). Every replica "
      "stops the step, no weight is updated, and the run can resume from its last checkpoint",
      parse_device_failure, plan.failures);
  add_fault_list(
      command, "--nan-at", "DEVICE@STEP[,...]",
      "A NaN appears in that device's gradient in that global step; the divergence check names "
      "it (replica, layer, step) before the all-reduce, so it never reaches the weights",
      parse_nan_at, plan.nans);
}

std::string check_fault_devices(const core::FaultPlan& plan, int devices) {
  auto beyond = [&](const char* flag, int device) {
    return std::string(flag) + " /gpu:" + std::to_string(device) + ": the run has " +
           device_range(devices);
  };
  for (std::size_t i = 0; i < plan.slow.size(); ++i) {
    const int device = plan.slow[i].device;
    if (device >= devices) return beyond("--slow-device", device);
    for (std::size_t j = 0; j < i; ++j) {
      if (plan.slow[j].device == device) {
        return "--slow-device names /gpu:" + std::to_string(device) +
               " twice: a device computes at one speed; give it once";
      }
    }
  }
  for (const core::DeviceFailure& f : plan.failures) {
    if (f.device >= devices) return beyond("--fail-device", f.device);
    if (f.phase == core::FailurePhase::kAllReduce && devices == 1) {
      return "--fail-device /gpu:0@" + std::to_string(f.step) +
             ": one device has no all-reduce to fail in; give :split, :forward or :backward, or "
             "more --gpus";
    }
  }
  for (const core::NanInGradient& n : plan.nans) {
    if (n.device >= devices) return beyond("--nan-at", n.device);
  }
  return "";
}

std::string check_fault_steps(const core::FaultPlan& plan, std::int64_t first_step,
                              std::int64_t last_step) {
  auto outside = [&](const char* flag, int device, std::int64_t step) -> std::string {
    if (step > first_step && step <= last_step) return "";
    const std::string fault =
        std::string(flag) + " /gpu:" + std::to_string(device) + "@" + std::to_string(step) + ": ";
    const std::string why = step <= first_step
                                ? "the run goes on from step " + std::to_string(first_step) +
                                      " (its checkpoint), so step " + std::to_string(step) +
                                      " never comes"
                                : "the run makes " + core::counted(last_step, "step") +
                                      ", so step " + std::to_string(step) + " never comes";
    const std::string give = first_step >= last_step ? "no step is left to run"
                             : first_step + 1 == last_step
                                 ? "give step " + std::to_string(last_step)
                                 : "give a step from " + std::to_string(first_step + 1) + " to " +
                                       std::to_string(last_step);
    return fault + why + "; " + give;
  };
  for (const core::DeviceFailure& f : plan.failures) {
    if (std::string p = outside("--fail-device", f.device, f.step); !p.empty()) return p;
  }
  for (const core::NanInGradient& n : plan.nans) {
    if (std::string p = outside("--nan-at", n.device, n.step); !p.empty()) return p;
  }
  return "";
}

}  // namespace mirrorlab::app
