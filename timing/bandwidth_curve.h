// A bandwidth that depends on the working set: what a STREAM-style copy or add kernel measured
// at each size (CPU caches make small sizes faster), or one number for a GPU's memory or a link.
#pragma once

#include <utility>
#include <vector>

namespace mirrorlab::timing {

class BandwidthCurve {
 public:
  BandwidthCurve() = default;
  explicit BandwidthCurve(double constant);  // the same at every size
  // Points (bytes per device, bytes/s); sizes must be positive and increasing, bandwidths > 0.
  explicit BandwidthCurve(std::vector<std::pair<double, double>> points);

  bool empty() const { return points_.empty(); }
  // Interpolated linearly in log(bytes) between the points, held flat past either end; 0 when
  // empty.
  double at(double bytes) const;
  // The value past the largest size: the bandwidth of main memory when the points reach past
  // the caches.
  double largest_size_value() const;
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;
};

}  // namespace mirrorlab::timing
