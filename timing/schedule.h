// What an all-reduce moves, step by step, as pure data: for each step, which rank sends how many
// bytes to which, and what the receiver does with them. The same schedules are timed on a
// topology (alpha_beta.h), drawn by the GUI's All-reduce panel, and counted in tests against the
// algorithms mirrorlab really runs (virtualgpu/), so the model moves what they move.
//
// A schedule says nothing of time, threads or devices: S is a number of bytes per rank.
#pragma once

#include <string>
#include <vector>

namespace mirrorlab::timing {

// What the worker does with a move's bytes. Memory traffic (bytes read plus written) in one
// memory: a copy reads x and writes x; a reduce reads x twice and writes x (dst += src); a read
// or a write alone (one-shot's loads and stores of peers' slices) moves x.
enum class Work { kCopy, kReduce, kRead, kWrite };
double memory_traffic(Work work, double bytes);  // 2x, 3x, x, x
const char* to_string(Work work);                // "copy", "reduce", "read", "write"

// A switch that reduces and multicasts (NVSwitch's NVLS): the other end of a move to or from it.
inline constexpr int kSwitch = -1;

struct Move {
  int from = 0, to = 0;  // ranks (or kSwitch); the bytes travel from `from` to `to`
  double bytes = 0;
  Work work = Work::kCopy;
  int worker = -1;  // the rank whose engine (thread, SMs) does it; -1: `to` (receiver-driven)
  // The rank that last wrote the bytes it reads, in an all-reduce run back to back; -1: `from`.
  // One-shot's rank r reads slice r of every buffer, which it wrote itself the time before.
  int written_by = -1;
  int engine() const { return worker >= 0 ? worker : (to != kSwitch ? to : from); }
  int writer() const { return written_by >= 0 ? written_by : from; }
};

struct ScheduleStep {
  std::string phase;  // "reduce", "broadcast", "reduce-scatter", "all-gather", "up the tree", ...
  std::vector<Move> moves;
};

struct Schedule {
  int ranks = 0;
  double bytes = 0;  // S: each rank's buffer
  std::vector<ScheduleStep> steps;
  // Its kernels load and store other ranks' buffers in place (the one-shot: one kernel per rank
  // reads slice r of every buffer and writes the sum into every buffer), rather than each rank's
  // bytes being sent to it: it runs only where every GPU can reach every other's memory.
  bool peer_kernels = false;
  // Bytes rank r receives (sends) over the whole schedule from (to) other ranks or the switch.
  double received(int rank) const;
  double sent(int rank) const;
  // Memory traffic of every move, as if all ranks shared one memory.
  double memory_traffic() const;
};

// mirrorlab's algorithms, as virtualgpu/ runs them (each rank receiver-driven, in its thread):
// reduce to `destination` (n-1 reduces there), then n-1 copies of the sum.
Schedule reduce_to_one_schedule(int ranks, double bytes, int destination = 0);
// 2(n-1) steps: n-1 of reduce-scatter, n-1 of all-gather, each rank pulling S/n from its left.
Schedule ring_schedule(int ranks, double bytes);
// One step: rank r sums slice r over every buffer and writes it back to every buffer.
Schedule one_shot_schedule(int ranks, double bytes);

// NCCL's algorithms, as its tuning model sees them (not pipelined here: the steps say what
// travels where; nccl_model.h gives NCCL's own estimate of the time).
// Ring: as ring_schedule (NCCL's ring moves the same bytes on the same links).
// Tree: NCCL's double binary tree over nodes with a chain inside each node; each of the two trees
// carries half of S, reduced up to the root, then broadcast down. `gpus_per_node` ranks per node.
Schedule tree_schedule(int ranks, int gpus_per_node, double bytes);
// The depth of that tree: (gpus_per_node - 1) + ceil(log2(nodes)) hops from the farthest leaf.
int tree_depth(int ranks, int gpus_per_node);
// NVLS: the NVSwitch reduces (every rank's S is read through the switch, one reduced slice S/n
// delivered to each rank), then each rank multicasts its slice to all through the switch.
Schedule nvls_schedule(int ranks, double bytes);

// nccl-tests' bus bandwidth factor for an all-reduce: 2(n-1)/n.
double busbw_factor(int ranks);

}  // namespace mirrorlab::timing
