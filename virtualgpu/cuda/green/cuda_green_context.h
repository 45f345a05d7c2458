// Green contexts: one SM partition of a GPU per logical GPU (an SM split). Internal to the CUDA
// build of cuda_runtime.cpp.
#pragma once

#include <string>

#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {

// `count` streams on GPU `ordinal`, each in a green context of its own with an equal share of
// the SMs. Returns an empty set, with `*unavailable` saying why, when the driver has no green
// contexts (older than CUDA 12.4, or unsupported on this GPU). Throws ConfigurationError when the
// SMs cannot be split `count` ways, CudaError when a driver call fails otherwise.
CudaExecutionSet make_green_executions(int ordinal, int count, std::string* unavailable);

}  // namespace mirrorlab::vgpu
