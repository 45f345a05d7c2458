// Fitting the model to a machine (what `mirrorlab compare` measures), as pure functions of what was
// measured: the memory's copy and add bandwidth by size (one engine alone and every engine at
// once, reading its own writes or another engine's) become the topology's curves, and the two
// parameters left, what an all-reduce and each of its steps cost however small
// (synchronisation), are fitted to all-reduces of small sizes, where they are all there is. The
// sizes the model is then checked at (1 MiB and up) are not used by the fit.
#pragma once

#include <string>
#include <vector>

#include "timing/schedule.h"
#include "timing/topology.h"

namespace mirrorlab::timing {

// The memory's bandwidth at one working set: bytes read plus written per second when the kernels
// run over `bytes` of the memory in all (one engine over all of it, or every device over its
// share).
struct MemorySample {
  double bytes = 0;
  double copy_one = 0, reduce_one = 0;  // one engine alone
  double copy_all = 0, reduce_all = 0;  // every device at once
  // The same, reading what another engine has just written (0: not measured, as on a GPU).
  double copy_peer_one = 0, reduce_peer_one = 0, copy_peer_all = 0, reduce_peer_all = 0;
};

// One measured all-reduce: what it moves, and its mean time.
struct AllReduceSample {
  std::string algorithm;
  Schedule schedule;
  double seconds = 0;
};

// A shared-memory topology (CPU virtual GPUs, or logical GPUs of one card) with the samples'
// curves, `engines` engines (CPU cores; 0 for as many as devices) and no latencies yet. Each
// curve is the closest in least squares (neighbours out of order are averaged) to the samples
// that has the shape a memory's curve has, so that one size helped or hindered by something
// else (another program on the machine) does not bend it: reading its own writes, a memory is
// never faster over more bytes, so the curve falls (where the first sizes' times hardly grew
// with their bytes, as on a GPU launching kernels shorter than a launch, they timed the launch:
// the curve keeps the first size that timed the memory's value there); reading another engine's
// writes it rises, then falls (fit.cpp says why). The peer curves are kept only when every
// sample has them.
// Throws std::invalid_argument for no samples, or a size or bandwidth that is not positive and
// finite (a peer bandwidth may be 0: not measured).
Topology shared_memory_topology(const std::vector<MemorySample>& samples, int engines);

// The three latencies of a shared memory: C once an all-reduce (handing it to the devices and
// waiting for them), L once a step (the barrier between steps) and M once a move of a step
// (queueing it and seeing it done), those that make estimate() closest to the samples in
// relative terms (least squares of (predicted - measured) / measured, a schedule of k steps and
// m moves in all costing C + k L + m M more). Algorithms with different numbers of steps and of
// moves tell them apart; where they cannot, or one would come out negative, the best with fewer
// of them (the others 0). Samples with no steps or no time are skipped; none left gives 0s.
struct Latencies {
  double call = 0, step = 0, move = 0;  // seconds
};
Latencies fit_latencies(const Topology& topology, const std::vector<AllReduceSample>& samples);

// Predicted against measured, for the table `mirrorlab compare` prints.
struct Prediction {
  std::string algorithm;
  int ranks = 0;
  double bytes = 0;
  double measured = 0;     // seconds
  double predicted = 0;    // seconds
  std::string bottleneck;  // the slowest step's phase and busiest resource: "broadcast: memory"
  // (predicted - measured) / measured
  double error() const { return measured > 0 ? (predicted - measured) / measured : 0; }
};
std::vector<Prediction> predict(const Topology& topology,
                                const std::vector<AllReduceSample>& samples);

// How much faster (> 0) or slower (< 0) the memory is now than when `fitted` was: the mean over
// the four own curves (copy and add, one engine and all) of (now - fitted) / fitted at now's
// working set. A machine shared with other programs changes from one hour to the next, and the
// predictions of a fit with it. Throws std::invalid_argument for a topology without memory
// curves or a sample whose own bandwidths are not positive and finite.
double memory_drift(const Topology& fitted, const MemorySample& now);

}  // namespace mirrorlab::timing
