// The element-wise kernels of the CUDA transport (add, scale) and the copy kernel that measures
// B. One kernel template: a scalar head up to dst's first 16-byte boundary, float4 body in a
// grid-stride loop, scalar tail (vector_split); the scalar path throughout when dst and src are
// not aligned alike. The ops and their work per element: collective_elements.h.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/devices/collective_kernels.cuh"
#include "virtualgpu/devices/collective_kernels.h"

namespace mirrorlab::vgpu {
namespace {

template <class Op>
__device__ float4 apply4(const Op& op, float4 d, float4 s) {
  return make_float4(op(d.x, s.x), op(d.y, s.y), op(d.z, s.z), op(d.w, s.w));
}

// dst[i] = op(dst[i], src[i]) for i < n. `vectorize`: dst and src share their 16-byte offset.
// (No __restrict__: the scale passes its buffer as both, and never reads src.)
template <class Op>
__global__ void elementwise_kernel(float* dst, const float* src, std::size_t n, Op op,
                                   int vectorize) {
  const std::size_t tid = global_thread();
  const std::size_t stride = grid_threads();
  if (!vectorize) {
    for (std::size_t i = tid; i < n; i += stride) elementwise_at(op, dst, src, i);
    return;
  }
  const VectorSplit split = vector_split(dst, n);
  const std::size_t tail = split.head + split.body * 4;
  if (tid < split.head) elementwise_at(op, dst, src, tid);
  if (tid < split.tail) elementwise_at(op, dst, src, tail + tid);
  float4* d4 = reinterpret_cast<float4*>(dst + split.head);
  const float4* s4 = reinterpret_cast<const float4*>(src + split.head);
  for (std::size_t i = tid; i < split.body; i += stride) {
    const float4 d = Op::kReadsDst ? d4[i] : make_float4(0, 0, 0, 0);
    const float4 s = Op::kReadsSrc ? s4[i] : make_float4(0, 0, 0, 0);
    d4[i] = apply4(op, d, s);
  }
}

template <class Op>
void launch_elementwise(float* dst, const float* src, std::size_t n, Op op, cudaStream_t stream,
                        int ordinal) {
  if (n == 0) return;
  const float* pointers[] = {dst, src};
  const bool vectorize = same_alignment(pointers, 2);
  const auto kernel = elementwise_kernel<Op>;
  const int blocks =
      grid_size(reinterpret_cast<const void*>(kernel), collective_work(n, vectorize), ordinal);
  kernel<<<blocks, kCollectiveThreads, 0, stream>>>(dst, src, n, op, vectorize ? 1 : 0);
  MIRRORLAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool same_alignment(const float* const* pointers, int count) {
  for (int i = 1; i < count; ++i) {
    if ((reinterpret_cast<std::uintptr_t>(pointers[i]) & 15u) !=
        (reinterpret_cast<std::uintptr_t>(pointers[0]) & 15u)) {
      return false;
    }
  }
  return true;
}

int grid_size(const void* kernel, std::size_t work, int ordinal) {
  // The SM count and the kernel's occupancy do not change during a run: ask once per
  // (kernel, GPU), since a launch of a small buffer should not pay for the queries.
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, int> full_grids;
  int full = 0;
  {
    std::lock_guard lock(mutex);
    const auto found = full_grids.find({kernel, ordinal});
    if (found != full_grids.end()) full = found->second;
  }
  if (full == 0) {
    int sms = 0, per_sm = 0;
    MIRRORLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
    // Occupancy is computed for the calling thread's current GPU, which is `ordinal`.
    MIRRORLAB_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kCollectiveThreads, 0));
    full = static_cast<int>(vgpu::full_grid(sms, per_sm));
    std::lock_guard lock(mutex);
    full_grids[{kernel, ordinal}] = full;
  }
  return static_cast<int>(collective_shape(work, static_cast<unsigned>(full)).blocks);
}

void launch_add(float* dst, const float* src, std::size_t n, cudaStream_t stream, int ordinal) {
  launch_elementwise(dst, src, n, AddOp{}, stream, ordinal);
}

void launch_scale(float* x, std::size_t n, float factor, cudaStream_t stream, int ordinal) {
  launch_elementwise(x, x, n, ScaleOp{factor}, stream, ordinal);  // src is not read
}

void launch_copy(float* dst, const float* src, std::size_t n, cudaStream_t stream, int ordinal) {
  launch_elementwise(dst, src, n, CopyOp{}, stream, ordinal);
}

}  // namespace mirrorlab::vgpu
