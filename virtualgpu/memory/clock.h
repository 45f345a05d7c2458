// Time stamps shared by streams, events, collectives and run events.
#pragma once

#include <chrono>

namespace mirrorlab::vgpu {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

inline double seconds_between(TimePoint begin, TimePoint end) {
  return std::chrono::duration<double>(end - begin).count();
}

}  // namespace mirrorlab::vgpu
