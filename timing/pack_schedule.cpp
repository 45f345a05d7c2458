#include "timing/pack_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mirrorlab::timing {

PackedAllReduce pack_all_reduce(const std::vector<PackWork>& packs, double backward_seconds,
                                const std::vector<double>& seconds, bool overlap,
                                double concurrency) {
  if (packs.empty()) throw std::invalid_argument("an all-reduce in packs needs a pack");
  if (seconds.size() != packs.size()) {
    throw std::invalid_argument("an all-reduce in packs needs one time for each pack");
  }
  if (!(backward_seconds >= 0) || !std::isfinite(backward_seconds)) {
    throw std::invalid_argument("backward's seconds must be 0 or more, and finite");
  }
  if (!(concurrency >= 0 && concurrency <= 1)) {
    throw std::invalid_argument("an all-reduce's concurrency with backward is from 0 to 1");
  }
  const double b = backward_seconds;
  PackedAllReduce out;
  double t = 0;  // when the lane is free
  double ready_before = 0;
  for (std::size_t i = 0; i < packs.size(); ++i) {
    const PackWork& p = packs[i];
    if (!(p.ready >= 0 && p.ready <= 1) || p.ready < ready_before) {
      throw std::invalid_argument(
          "each pack is written at a share of backward from 0 to 1, later than the pack before");
    }
    ready_before = p.ready;
    const double work = seconds[i];
    if (!(work >= 0) || !std::isfinite(work)) {
      throw std::invalid_argument("a pack's all-reduce time must be 0 or more, and finite");
    }
    out.all_reduce += work;
    const double start = overlap ? std::max(t, p.ready * b) : std::max(t, b);
    double finish = start + work;
    if (start < b && work > 0) {
      // At `concurrency` until backward ends, then at full speed.
      const double during = (b - start) * concurrency;
      finish = during >= work ? start + work / concurrency : b + (work - during);
    }
    out.start.push_back(start);
    out.finish.push_back(finish);
    t = finish;
  }
  out.exposed = std::max(0.0, t - b);
  return out;
}

}  // namespace mirrorlab::timing
