// A step's compute as launches plus a roofline (timing/compute_model.h): the parts, which kernels
// each bound counts, the fit recovering what made its samples, and the refusals.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "timing/compute_model.h"

namespace mirrorlab::timing {
namespace {

ComputeSpec spec() {
  ComputeSpec s;
  s.launch = 2e-6;
  s.host = 40e-6;
  s.rate = 10e12;
  s.bandwidth = 2e12;
  return s;
}

TEST(ComputeModel, EachKernelCostsALaunchAndTheLargerOfItsTwoTimes) {
  const std::vector<KernelWork> kernels = {
      {"gemm", "forward", LaunchKind::kLibrary, 1e9, 1e6},   // 100 us of FLOPs, 0.5 of bytes
      {"relu", "forward", LaunchKind::kKernel, 1e6, 100e6},  // 0.1 us of FLOPs, 50 of bytes
      {"copy", "forward", LaunchKind::kCopy, 0, 0},          // a launch and nothing more
  };
  const ComputeTime t = compute_time(kernels, spec());
  EXPECT_EQ(t.kernels, 3);
  EXPECT_DOUBLE_EQ(t.launches, 6e-6);
  EXPECT_DOUBLE_EQ(t.flops, 100e-6);
  EXPECT_DOUBLE_EQ(t.bytes, 50e-6);
  EXPECT_DOUBLE_EQ(t.host, 40e-6);
  EXPECT_DOUBLE_EQ(t.seconds, 196e-6);
  EXPECT_DOUBLE_EQ(t.flop_count, 1.001e9);
  EXPECT_DOUBLE_EQ(t.byte_count, 101e6);
}

TEST(ComputeModel, ASmallStepIsItsLaunchesAndTheHost) {
  const std::vector<KernelWork> kernels(
      30, KernelWork{"tiny", "forward", LaunchKind::kKernel, 100, 400});
  const ComputeTime t = compute_time(kernels, spec());
  EXPECT_NEAR((t.launches + t.host) / t.seconds, 1.0, 1e-3);
}

// Samples made by a known spec are fitted back to it (within the grid's steps).
TEST(ComputeModel, TheFitFindsWhatMadeItsSamples) {
  const ComputeSpec truth = spec();
  std::vector<ComputeSample> samples;
  // Steps heavy in arithmetic and steps heavy in memory, so that each rate is seen apart.
  for (const auto& [products, elementwise] :
       {std::pair{1.0, 1.0}, std::pair{16.0, 1.0}, std::pair{64.0, 2.0}, std::pair{1.0, 16.0},
        std::pair{2.0, 64.0}}) {
    std::vector<KernelWork> k = {
        {"gemm", "forward", LaunchKind::kLibrary, 2e7 * products, 1e6 * products},
        {"relu", "forward", LaunchKind::kKernel, 1e5 * elementwise, 8e6 * elementwise},
        {"adam", "update", LaunchKind::kKernel, 1e6, 2e7},
    };
    samples.push_back({std::to_string(products) + " x " + std::to_string(elementwise), k,
                       compute_time(k, truth).seconds});
  }
  const ComputeSpec fit = fit_compute(samples, truth.launch, 4e12, 67e12);
  EXPECT_NEAR(fit.rate / truth.rate, 1.0, 0.05);
  EXPECT_NEAR(fit.bandwidth / truth.bandwidth, 1.0, 0.05);
  EXPECT_NEAR(fit.host / truth.host, 1.0, 0.1);
  for (const ComputeSample& s : samples) {
    EXPECT_NEAR(compute_time(s.kernels, fit).seconds / s.seconds, 1.0, 0.05) << s.label;
  }
}

TEST(ComputeModel, RefusesWhatCannotBePriced) {
  const std::vector<KernelWork> one = {{"k", "forward", LaunchKind::kKernel, 1, 1}};
  ComputeSpec none;
  EXPECT_THROW(compute_time(one, none), std::invalid_argument);
  ComputeSpec negative = spec();
  negative.host = -1e-6;
  EXPECT_THROW(compute_time(one, negative), std::invalid_argument);
  EXPECT_THROW(compute_time({{"k", "forward", LaunchKind::kKernel, -1, 0}}, spec()),
               std::invalid_argument);
  const ComputeSample s{"s", one, 1e-4};
  EXPECT_THROW(fit_compute({s, s}, 1e-6, 1e12, 1e13), std::invalid_argument);
  EXPECT_THROW(fit_compute({s, s, ComputeSample{"empty", {}, 1e-4}}, 1e-6, 1e12, 1e13),
               std::invalid_argument);
  EXPECT_THROW(fit_compute({s, s, s}, -1e-6, 1e12, 1e13), std::invalid_argument);
  EXPECT_THROW(fit_compute({s, s, s}, 1e-6, 0, 1e13), std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab::timing
