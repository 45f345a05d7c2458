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

namespace mirrorlab::vgpu {
class CudaApi;
}  // namespace mirrorlab::vgpu

namespace mirrorlab::core {

class GpuModelApi;

// Kernels on GPU `ordinal` through `api` (the runtime) and `model` (cuBLAS and the model's
// kernels), enqueued on `stream` (of that GPU), with scratch taken from `arena` (that GPU's
// memory). Built in every build: the tests run it against fakes; a CUDA device's replica runs it
// with the device's CudaApi and runtime_gpu_model_api() (which says so where the build has no
// CUDA).
std::unique_ptr<Ops> make_cuda_ops(vgpu::CudaApi& api, GpuModelApi& model, int ordinal,
                                   void* stream, vgpu::MemoryArena& arena);

}  // namespace mirrorlab::core
