// Green contexts, one SM partition of a GPU per logical GPU (an SM split), over the driver calls
// they are made of. The steps are CUDA's own: the GPU's SM resource is split into equal groups;
// each group becomes a green context with a non-blocking stream; kernels launched on that stream
// run on the group's SMs only. GreenDriver is those calls, one method each, with no CUDA type in
// sight: cuda_green_context.cpp gives CUDA's driver API (reached at run time, CUDA builds), the
// tests a fake (tests/virtualgpu/test_green_contexts.cpp), so that everything but the calls
// themselves runs on any machine: the split's plan, the order of creation and destruction, what is
// said when the driver cannot.
#pragma once

#include <memory>
#include <string>

#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {

class GreenDriver {
 public:
  using Context = void*;  // a CUgreenCtx
  using Stream = void*;   // a CUstream (a cudaStream_t)
  struct SmResource {
    unsigned sm_count = 0;       // the GPU's SMs
    unsigned min_partition = 0;  // the fewest SMs a group may have
    unsigned alignment = 0;      // a group's SMs: a multiple of this
  };
  struct Split {
    unsigned made = 0;           // groups made
    unsigned sms_per_group = 0;  // SMs in each
    unsigned left = 0;           // SMs in no group
  };

  virtual ~GreenDriver() = default;
  // GPU `ordinal`'s primary context, alive (green contexts are made from it; the caller's
  // current GPU is put back after).
  virtual void use_primary_context(int ordinal) = 0;
  // GPU `ordinal`'s SMs (cuDeviceGetDevResource); false, with *why, when the GPU or the driver has
  // no SM partitions.
  virtual bool sm_resource(int ordinal, SmResource* out, std::string* why) = 0;
  // The SMs of the last sm_resource() in up to `count` groups of `sms` each
  // (cuDevSmResourceSplitByCount), kept for create_context().
  virtual Split split(int count, unsigned sms) = 0;
  // A green context over group `group` of the last split (cuDevResourceGenerateDesc,
  // cuGreenCtxCreate); nullptr, with *why, where they are not supported (under MPS).
  virtual Context create_context(int group, std::string* why) = 0;
  // A non-blocking stream in `context` (cuGreenCtxStreamCreate).
  virtual Stream create_stream(Context context) = 0;
  // Never throw. A context's streams are destroyed before it: it does not destroy them.
  virtual void destroy_stream(Stream stream) noexcept = 0;
  virtual void destroy_context(Context context) noexcept = 0;
};

// `count` streams on GPU `ordinal`, each in a green context of its own with an equal share of the
// SMs, made through `driver` (which each execution keeps, to destroy its stream and then its
// context). Returns an empty set, with *unavailable saying why, when the GPU or the driver has no
// green contexts. Throws ConfigurationError when the SMs cannot be split `count` ways; what the
// driver throws (CudaError) when a call fails otherwise, with nothing made left alive.
CudaExecutionSet make_green_executions(std::shared_ptr<GreenDriver> driver, int ordinal, int count,
                                       std::string* unavailable);

}  // namespace mirrorlab::vgpu
