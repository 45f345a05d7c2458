// A step's gradients all-reduced in packs (core/strategy/gradient_packs.h), and what overlapping
// them with backward hides: the timing model's side, a pure function as the rest of timing/.
//
// Each pack is written by backward at some point of it (its `ready` share of backward, the last
// layer's first) and all-reduced on its device's communication lane, one pack after another:
//   start(i)  = max(ready(i) x backward, finish(i - 1))    (with overlap; without: after backward)
//   finish(i) = start(i) + its all-reduce, run at `concurrency` of its speed while backward
//               still computes and at full speed after
//   exposed   = finish(last) - backward: what the step waits for after backward
// A pack's all-reduce is its own (its latency too): many small packs cost more in all. Left out:
// backward slowed by the lane where they share hardware (`concurrency` below 1 stands for it).
#pragma once

#include <string>
#include <vector>

namespace mirrorlab::timing {

struct PackWork {
  double bytes = 0;  // the pack's gradients per replica
  double ready = 1;  // the share of backward done when backward has written them, 0 to 1
};

struct PackedAllReduce {
  double all_reduce = 0;  // seconds: every pack's all-reduce at full speed, added up
  double exposed = 0;     // seconds after backward's end until the last pack is done
  double hidden() const { return all_reduce - exposed; }  // what overlap took off the step
  std::vector<double> start, finish;  // each pack's, seconds from backward's start
};

// `seconds[i]`: pack i's all-reduce alone, at full speed. `concurrency`: the share of its speed
// an all-reduce runs at while backward computes (1: communication has hardware of its own, as
// GPUs' links and copy engines; 0: it waits for backward's cores). Throws std::invalid_argument
// for no packs, a time for each pack missing or negative, a ready share outside [0, 1] or not
// rising backwards, a negative backward, or a concurrency outside [0, 1].
PackedAllReduce pack_all_reduce(const std::vector<PackWork>& packs, double backward_seconds,
                                const std::vector<double>& seconds, bool overlap,
                                double concurrency);

}  // namespace mirrorlab::timing
