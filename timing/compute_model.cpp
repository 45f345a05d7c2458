#include "timing/compute_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mirrorlab::timing {

namespace {

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// The fit searches the rate and the bandwidth down to this share of the peaks given.
constexpr double kLowest = 1e-2;

// The roofline part of a step: what its kernels cost beyond their launches.
struct Roofline {
  double flops = 0, bytes = 0;
};
Roofline roofline(const std::vector<KernelWork>& kernels, double rate, double bandwidth) {
  Roofline r;
  for (const KernelWork& k : kernels) {
    const double arithmetic = k.flops / rate;
    const double memory = k.bytes / bandwidth;
    (arithmetic >= memory ? r.flops : r.bytes) += std::max(arithmetic, memory);
  }
  return r;
}

}  // namespace

ComputeTime compute_time(const std::vector<KernelWork>& kernels, const ComputeSpec& spec) {
  if (!spec.given() || !std::isfinite(spec.rate) || !std::isfinite(spec.bandwidth) ||
      !finite_non_negative(spec.launch) || !finite_non_negative(spec.host)) {
    throw std::invalid_argument(
        "the device's compute is not given: [compute] needs a rate and a bandwidth above 0 and "
        "launch and host costs of 0 or more");
  }
  ComputeTime t;
  for (const KernelWork& k : kernels) {
    if (!finite_non_negative(k.flops) || !finite_non_negative(k.bytes)) {
      throw std::invalid_argument("kernel " + k.name + " has negative or non-finite work");
    }
    t.flop_count += k.flops;
    t.byte_count += k.bytes;
  }
  t.kernels = static_cast<int>(kernels.size());
  const Roofline r = roofline(kernels, spec.rate, spec.bandwidth);
  t.launches = t.kernels * spec.launch;
  t.flops = r.flops;
  t.bytes = r.bytes;
  t.host = spec.host;
  t.seconds = t.launches + t.flops + t.bytes + t.host;
  return t;
}

ComputeSpec fit_compute(const std::vector<ComputeSample>& samples, double launch, double bandwidth,
                        double max_rate) {
  if (samples.size() < 3) {
    throw std::invalid_argument("fitting a device's compute needs three measured steps or more");
  }
  for (const ComputeSample& s : samples) {
    if (s.kernels.empty() || !(s.seconds > 0) || !std::isfinite(s.seconds)) {
      throw std::invalid_argument("measured step " + s.label +
                                  " has no kernels or no time above 0");
    }
  }
  if (!(bandwidth > 0) || !(max_rate > 0) || !std::isfinite(bandwidth) ||
      !std::isfinite(max_rate) || !finite_non_negative(launch)) {
    throw std::invalid_argument(
        "fitting a device's compute needs a bandwidth and a rate above 0 and a launch of 0 or "
        "more");
  }
  // At a given rate and bandwidth each sample's relative residual, (H + F_i) / m_i - 1 with F_i
  // its launches and roofline, is linear in the host's cost H: least squares gives it.
  ComputeSpec spec;
  spec.launch = launch;
  double best_error = std::numeric_limits<double>::infinity();
  constexpr int kSteps = 120;
  for (int j = 0; j <= kSteps; ++j) {
    const double bw = bandwidth * std::pow(kLowest, static_cast<double>(j) / kSteps);
    for (int i = 0; i <= kSteps; ++i) {
      const double rate = max_rate * std::pow(kLowest, static_cast<double>(i) / kSteps);
      std::vector<double> fixed;
      double num = 0, den = 0;
      for (const ComputeSample& s : samples) {
        const Roofline r = roofline(s.kernels, rate, bw);
        fixed.push_back(static_cast<double>(s.kernels.size()) * launch + r.flops + r.bytes);
        num += (s.seconds - fixed.back()) / (s.seconds * s.seconds);
        den += 1.0 / (s.seconds * s.seconds);
      }
      const double host = std::max(0.0, num / den);
      double error = 0;
      for (std::size_t k = 0; k < samples.size(); ++k) {
        const double d = (host + fixed[k]) / samples[k].seconds - 1.0;
        error += d * d;
      }
      if (error < best_error) {
        best_error = error;
        spec.host = host;
        spec.rate = rate;
        spec.bandwidth = bw;
      }
    }
  }
  return spec;
}

}  // namespace mirrorlab::timing
