// One chunk moved from one rank's buffer to another's: what an all-reduce's step is made of, for
// the collectives that plan the moves (collective.h) and the transports that make them
// (transport.h).
#pragma once

#include <cstddef>

#include "virtualgpu/memory/clock.h"

namespace mirrorlab::vgpu {

enum class TransferKind {
  kReduce,  // dst[chunk] += src[chunk]
  kCopy,    // dst[chunk]  = src[chunk]
};

// One chunk moved from one rank's buffer to another's.
struct Transfer {
  int src = 0;
  int dst = 0;
  std::size_t begin = 0;  // element range [begin, end) of the buffers
  std::size_t end = 0;
  std::size_t bytes = 0;  // (end - begin) * sizeof(float)
  TransferKind kind = TransferKind::kCopy;
  TimePoint start{};
  TimePoint finish{};
};

}  // namespace mirrorlab::vgpu
