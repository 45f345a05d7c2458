// The element-wise kernels of the CUDA transport (add, scale) and the copy kernel that measures
// B. One kernel template: a scalar head up to dst's first 16-byte boundary, float4 body in a
// grid-stride loop, scalar tail; the scalar path throughout when dst and src are not aligned
// alike. A copy never reads its destination (that would cost a third of the bandwidth).
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/collective_kernels.cuh"
#include "virtualgpu/collective_kernels.h"

namespace mirrorlab::vgpu {
namespace {

struct AddOp {
  static constexpr bool kReadsDst = true, kReadsSrc = true;
  __device__ float operator()(float d, float s) const { return d + s; }
};
struct CopyOp {
  static constexpr bool kReadsDst = false, kReadsSrc = true;
  __device__ float operator()(float, float s) const { return s; }
};
struct ScaleOp {
  static constexpr bool kReadsDst = true, kReadsSrc = false;
  float factor;
  __device__ float operator()(float d, float) const { return d * factor; }
};

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
  const auto scalar = [&](std::size_t i) {
    const float d = Op::kReadsDst ? dst[i] : 0.0f;
    const float s = Op::kReadsSrc ? src[i] : 0.0f;
    dst[i] = op(d, s);
  };
  if (!vectorize) {
    for (std::size_t i = tid; i < n; i += stride) scalar(i);
    return;
  }
  const std::size_t head = head_elements(dst, n);
  const std::size_t body = (n - head) / 4;
  const std::size_t tail = head + body * 4;
  if (tid < head) scalar(tid);
  if (tid < n - tail) scalar(tail + tid);
  float4* d4 = reinterpret_cast<float4*>(dst + head);
  const float4* s4 = reinterpret_cast<const float4*>(src + head);
  for (std::size_t i = tid; i < body; i += stride) {
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
  const int blocks = grid_size(reinterpret_cast<const void*>(kernel), kCollectiveThreads,
                               vectorize ? n / 4 + 1 : n, ordinal);
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

int grid_size(const void* kernel, int threads, std::size_t work, int ordinal) {
  // The SM count and the kernel's occupancy do not change during a run: ask once per
  // (kernel, GPU), since a launch of a small buffer should not pay for the queries.
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, int> full_grid;
  int full = 0;
  {
    std::lock_guard lock(mutex);
    const auto found = full_grid.find({kernel, ordinal});
    if (found != full_grid.end()) full = found->second;
  }
  if (full == 0) {
    int sms = 0, per_sm = 0;
    MIRRORLAB_CUDA_CHECK(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
    // Occupancy is computed for the calling thread's current GPU, which is `ordinal`.
    MIRRORLAB_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
    full = std::max(1, sms * std::max(1, per_sm));
    std::lock_guard lock(mutex);
    full_grid[{kernel, ordinal}] = full;
  }
  const std::size_t needed = (work + threads - 1) / threads;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(needed, full)));
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
