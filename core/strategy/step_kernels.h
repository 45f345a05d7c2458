// The kernels one replica's training step launches on a GPU, in order, as mirrorlab's CUDA
// backend launches them (CudaOps: each call one launch, a matrix product or column sum one cuBLAS
// call), each with its arithmetic and the bytes it moves: what the timing model prices
// (timing/compute_model.h). Listed by running the model's forward, loss, backward, gradient
// check and optimizer update against kernels that record their calls and compute nothing, so
// the list is the model's own calls, not a second description of them. Left out: the shard's copy
// to the device (not priced anywhere: on the H200 it took 19 to 217 us a step), the all-reduce
// (priced apart), and the kernels cuBLAS adds inside a call (split-K reductions: ncu counted 30
// kernels in a CNN step of 16 where the list has 26 kernels and cuBLAS calls).
#pragma once

#include <cstddef>
#include <vector>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "timing/compute_model.h"
#include "timing/step_words.h"
#include "timing/topology.h"

namespace mirrorlab::core {

// The kernels of one replica's step at `batch` examples (1 or more; a batch's kernels are an
// affine function of its size, so the list is recorded at 1 and 2 and carried on). Throws
// std::invalid_argument for a batch of 0.
std::vector<timing::KernelWork> step_kernels(ModelKind model, const OptimizerConfig& optimizer,
                                             std::size_t batch);

// One replica's compute on a GPU of `machine` at `batch` examples: its kernels priced by the
// machine's [compute] (timing/compute_model.h), or, where it gives none, its FLOPs at the
// machine's peak FLOP/s (a lower bound, as before the kernels were modelled). `source` says how,
// with the parts. Throws std::invalid_argument where the machine gives neither, or for a batch of
// 0.
struct ModelledCompute {
  double seconds = 0;
  bool from_kernels = false;  // false: FLOPs over the peak
  timing::ComputeTime parts;  // from_kernels: launches, FLOPs, bytes and host
  // What replicas sharing one card do at once (timing::StepInputs::overlapped): from_kernels,
  // the launches and the host's cost; else 0.
  double overlapped = 0;
  std::string source;
};
ModelledCompute modelled_compute(ModelKind model, const OptimizerConfig& optimizer,
                                 std::size_t batch, const timing::Topology& machine,
                                 timing::SecondsText seconds_text = timing::time_text);

}  // namespace mirrorlab::core
