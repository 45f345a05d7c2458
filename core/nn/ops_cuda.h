// CudaOps: the Ops of a CUDA physical or logical GPU (kernels in kernels_cuda_*.cu, matrix
// products with cuBLAS). Everything is enqueued on the device's own stream; the host waits only
// where it reads results (loss stats, copies to the host, synchronize).
//
// Implemented: every Ops kernel, loss stats read back once per call through pinned memory, phase
// marks as CUDA events. Missing: fused bias+ReLU (the model keeps ReLU as its own layer), device
// all-reduce (the collectives' part).
#pragma once

#include <memory>
#include <string>

#include "core/nn/ops.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {

// Kernels on GPU `cuda_ordinal`, enqueued on `cuda_stream` (a cudaStream_t; nullptr is the
// legacy default stream), with scratch taken from `arena` (that GPU's memory). Throws
// std::runtime_error with a sentence when the build has no CUDA or the GPU cannot be used.
std::unique_ptr<Ops> make_cuda_ops(int cuda_ordinal, void* cuda_stream, vgpu::MemoryArena& arena);

}  // namespace mirrorlab::core
