#include "timing/bandwidth_curve.h"

#include <cmath>
#include <stdexcept>

namespace mirrorlab::timing {

BandwidthCurve::BandwidthCurve(double constant) : BandwidthCurve({{1.0, constant}}) {}

BandwidthCurve::BandwidthCurve(std::vector<std::pair<double, double>> points)
    : points_(std::move(points)) {
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const auto [bytes, bandwidth] = points_[i];
    if (!(bytes > 0) || !std::isfinite(bytes) || !(bandwidth > 0) || !std::isfinite(bandwidth)) {
      throw std::invalid_argument(
          "a bandwidth curve's sizes and bandwidths must be positive, "
          "finite numbers");
    }
    if (i > 0 && !(bytes > points_[i - 1].first)) {
      throw std::invalid_argument("a bandwidth curve's sizes must increase");
    }
  }
}

double BandwidthCurve::at(double bytes) const {
  if (points_.empty()) return 0;
  if (!(bytes > points_.front().first)) return points_.front().second;
  if (!(bytes < points_.back().first)) return points_.back().second;
  std::size_t hi = 1;
  while (points_[hi].first < bytes) ++hi;
  const auto [x0, y0] = points_[hi - 1];
  const auto [x1, y1] = points_[hi];
  const double t = std::log(bytes / x0) / std::log(x1 / x0);
  return y0 + t * (y1 - y0);
}

double BandwidthCurve::largest_size_value() const {
  return points_.empty() ? 0 : points_.back().second;
}

}  // namespace mirrorlab::timing
