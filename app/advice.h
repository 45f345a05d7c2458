// What a user of the command line can do about an error of the layers below. Those layers state
// facts (typed errors: which device, how much memory, which setting); the advice that names
// flags is said here, in the command line's words, as the GUI and the lessons say theirs.
#pragma once

#include <exception>
#include <string>

#include "app/flags/device_flags.h"

namespace mirrorlab::app {

struct TrainOptions;

// What the command that failed was given.
struct AdviceContext {
  const DeviceFlags* devices = nullptr;
  const TrainOptions* train = nullptr;  // `train` and `gui`
  bool bench = false;                   // `bench allreduce`: its buffers, not a model
};

// what() of `error`, led by the flag it is about and followed by what to change, where the
// error is one the layers below type (configuration, out of memory, data); else what() alone.
std::string explain(const std::exception& error, const AdviceContext& context);

}  // namespace mirrorlab::app
