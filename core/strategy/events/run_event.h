// One timed event of a run: which device did which phase of which step, when, moving how many
// bytes. The event store keeps them (core/strategy/events/run_events.h); listeners see each as it
// happens.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "virtualgpu/memory/clock.h"

namespace mirrorlab::core {

enum class Phase {
  kBroadcastInit,  // initial variables copied from replica 0 to every replica
  kSplit,          // this replica's shard of the global batch copied to its device
  kForward,
  kBackward,
  kAllReduce,
  kUpdate,
  kEvaluate,
  // A replica at the all-reduce, idle until the last replica arrives: a straggler shows as every
  // other replica waiting here. The all-reduce's own phase starts when all have arrived.
  kWait,
};
inline constexpr int kNumPhases = 8;
const char* to_string(Phase phase);  // "split", "forward", ..., "all-reduce"

// Where on its device a phase ran: the device's own work, or its communication lane (a pack's
// all-reduce sent while backward still ran, as NCCL runs on a stream of its own).
enum class Lane : std::uint8_t { kCompute, kCommunication };

struct RunEvent {
  int device = 0;
  Phase phase = Phase::kSplit;
  std::int64_t step = 0;  // global training step (0-based); evaluation batches count on their own
  vgpu::TimePoint begin{}, end{};
  std::size_t bytes = 0;  // bytes copied or reduced, where the phase moves data
  // A step whose gradients went in several packs: its all-reduces' and waits' pack (0: the first
  // all-reduced, the last layers'); -1 otherwise.
  int pack = -1;
  Lane lane = Lane::kCompute;
};

// Seconds spent per phase, for one device.
using PhaseTotals = std::array<double, kNumPhases>;

}  // namespace mirrorlab::core
