// The work per element of the collectives' kernels (collective_kernels.cu, one_shot_all_reduce.cu)
// as functions both sides compile (MIRRORLAB_HD), so tests/core/nn/test_kernel_elements.cpp runs
// them on the CPU over every index and checks them bit for bit against the exact sums. The float4
// path of the kernels does the same arithmetic lane by lane (each lane adds in rank order); where
// it starts and ends is vector_split (virtualgpu/cuda/launch_shape.h), tested on its own.
#pragma once

#include <cstddef>

#include "virtualgpu/cuda/host_device.h"
#include "virtualgpu/cuda/launch_shape.h"

namespace mirrorlab::vgpu {

// dst[i] = op(dst[i], src[i]) for the transport's kernels; kReadsDst / kReadsSrc say which
// operand the kernel must load (a copy never reads its destination: that would cost a third of
// the bandwidth; a scale never reads a source).
struct AddOp {
  static constexpr bool kReadsDst = true, kReadsSrc = true;
  MIRRORLAB_HD float operator()(float d, float s) const { return d + s; }
};
struct CopyOp {
  static constexpr bool kReadsDst = false, kReadsSrc = true;
  MIRRORLAB_HD float operator()(float, float s) const { return s; }
};
struct ScaleOp {
  static constexpr bool kReadsDst = true, kReadsSrc = false;
  float factor;
  MIRRORLAB_HD float operator()(float d, float) const { return d * factor; }
};

// Element i of the element-wise kernel: reads only what the op needs.
template <class Op>
MIRRORLAB_HD inline void elementwise_at(const Op& op, float* dst, const float* src, std::size_t i) {
  const float d = Op::kReadsDst ? dst[i] : 0.0f;
  const float s = Op::kReadsSrc ? src[i] : 0.0f;
  dst[i] = op(d, s);
}

// Element i of the one-shot: the sum over every rank's buffer in rank order, written into every
// buffer. kRanks > 0: the count known at compile time (the loops unrolled); 0: b.n at run time.
template <int kRanks>
MIRRORLAB_HD inline void one_shot_at(const OneShotBuffers& b, std::size_t i) {
  const int ranks = kRanks > 0 ? kRanks : b.n;
  float sum = b.data[0][i];
  MIRRORLAB_UNROLL
  for (int k = 1; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
    if (k < ranks) sum += b.data[k][i];
  }
  MIRRORLAB_UNROLL
  for (int k = 0; k < (kRanks > 0 ? kRanks : kMaxOneShotRanks); ++k) {
    if (k < ranks) b.data[k][i] = sum;
  }
}

}  // namespace mirrorlab::vgpu
