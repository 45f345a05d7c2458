// The kernels the collectives run on CUDA memory, behind plain launchers (only for files built
// with CUDA). Every launcher checks its launch and returns at once for n == 0; all are written
// for bandwidth: float4 loads and stores where the pointers allow (a scalar head up to the
// first 16-byte boundary and a scalar tail: buffers may be misaligned, as nccl-tests makes
// them), grid-stride loops, and as many blocks as fill every SM of the card. Their work per
// element is in collective_elements.h and their launch shapes in cuda/launch_shape.h, both
// tested on the CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "virtualgpu/devices/collective_elements.h"

namespace mirrorlab::vgpu {

// dst[i] += src[i], i < n, on `stream` of GPU `ordinal` (the calling thread's current GPU).
void launch_add(float* dst, const float* src, std::size_t n, cudaStream_t stream, int ordinal);
// x[i] *= factor.
void launch_scale(float* x, std::size_t n, float factor, cudaStream_t stream, int ordinal);
// dst[i] = src[i]: the copy kernel that measures the memory's bandwidth B.
void launch_copy(float* dst, const float* src, std::size_t n, cudaStream_t stream, int ordinal);

// The one-shot all-reduce of elements [begin, end) of all buffers, as ONE kernel launch: every
// block sums its elements over all n buffers, in rank order, and writes the sum to all n.
void launch_one_shot(const OneShotBuffers& buffers, std::size_t begin, std::size_t end,
                     cudaStream_t stream, int ordinal);

// Blocks for a grid-stride kernel over `work` items in blocks of kCollectiveThreads: enough to
// fill every SM of GPU `ordinal` at the kernel's occupancy (full_grid), and no more than the
// work needs (collective_shape).
int grid_size(const void* kernel, std::size_t work, int ordinal);

// True when every pointer has the same offset from a 16-byte boundary, so float4 accesses at
// the same element index are aligned for all of them after the same scalar head.
bool same_alignment(const float* const* pointers, int count);

}  // namespace mirrorlab::vgpu
