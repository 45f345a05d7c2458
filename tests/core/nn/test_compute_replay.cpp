// The timing model's compute (timing/compute_model.h, pricing the kernels
// core/strategy/step_kernels.h lists) against the steps recorded on a GPU
// (docs/gpu/2026-11-28-nvidia-h200-steps.csv): the presets' [compute] is what fitting those steps
// gives, and it predicts each within 25%, but for the rows the file marks as outside what a
// roofline can see (and those must stay outside, so that the mark is true).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/nn/training_flops.h"
#include "core/strategy/step_kernels.h"
#include "tests/support/csv_cells.h"
#include "timing/compute_model.h"
#include "timing/topology_file.h"

namespace mirrorlab::testing {
namespace {

constexpr const char* kSteps = "2026-11-28-nvidia-h200-steps.csv";
constexpr double kH200Bandwidth = 4.8e12;  // HBM3e, bytes/s (H200 datasheet)
constexpr double kH200Fp32 = 67e12;        // FLOP/s (H200 datasheet)
constexpr double kLaunch = 2.5e-6;         // the presets' launch (their source says where from)

struct RecordedStep {
  timing::ComputeSample sample;
  std::string outside;  // why a roofline cannot see it ("": it must be within 25%)
};

std::vector<RecordedStep> read_steps() {
  const std::string path = std::string(MIRRORLAB_SOURCE_DIR) + "/docs/gpu/" + kSteps;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<RecordedStep> steps;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> c = csv_cells(line);
    if (std::exchange(header, false)) {
      EXPECT_EQ(c, (std::vector<std::string>{"model", "batch_per_replica", "logical_gpus",
                                             "split_us", "forward_us", "backward_us", "update_us",
                                             "outside_the_model"}));
      continue;
    }
    EXPECT_GE(c.size(), 7u) << line;
    if (c.size() < 7) continue;
    const core::ModelKind model = core::parse_model_kind(c[0]);
    const int batch = std::stoi(c[1]);
    RecordedStep s;
    s.sample.label = c[0] + " at " + c[1] + " a replica on " + c[2] + " logical GPU(s)";
    s.sample.kernels = core::step_kernels(model, {}, static_cast<std::size_t>(batch));
    s.sample.seconds = (std::stod(c[4]) + std::stod(c[5]) + std::stod(c[6])) * 1e-6;
    s.outside = c.size() > 7 ? c[7] : "";
    steps.push_back(std::move(s));
  }
  EXPECT_GE(steps.size(), 4u);
  return steps;
}

// The preset's [compute] on the H200 the steps were recorded on: the same launch, host and rate
// (the same GH100 chip), the same share of the H200's bandwidth as of the H100's.
timing::ComputeSpec h200_from(const timing::Topology& h100) {
  timing::ComputeSpec spec = h100.compute;
  spec.bandwidth *= kH200Bandwidth / 3.35e12;
  return spec;
}

TEST(ComputeReplay, ThePresetsComputeIsTheFitOfTheRecordedSteps) {
  // The rows the file marks as outside the model do not inform it.
  std::vector<timing::ComputeSample> samples;
  for (const RecordedStep& s : read_steps()) {
    if (s.outside.empty()) samples.push_back(s.sample);
  }
  const timing::ComputeSpec fit = timing::fit_compute(samples, kLaunch, kH200Bandwidth, kH200Fp32);
  const timing::ComputeSpec preset =
      h200_from(timing::read_topology(timing::default_topology_folder() / "dgx-h100.toml"));
  EXPECT_DOUBLE_EQ(preset.launch, kLaunch);
  // The presets keep three figures of the fit's grid (steps of 4% in rate and bandwidth).
  EXPECT_NEAR(preset.host / fit.host, 1.0, 0.01) << fit.host * 1e6 << " us";
  EXPECT_NEAR(preset.rate / fit.rate, 1.0, 0.01) << fit.rate / 1e12 << " TFLOP/s";
  EXPECT_NEAR(preset.bandwidth / fit.bandwidth, 1.0, 0.01) << fit.bandwidth / 1e9 << " GB/s";
}

TEST(ComputeReplay, EachRecordedStepWithinAQuarter) {
  const timing::ComputeSpec spec =
      h200_from(timing::read_topology(timing::default_topology_folder() / "dgx-h100.toml"));
  for (const RecordedStep& s : read_steps()) {
    const double predicted = timing::compute_time(s.sample.kernels, spec).seconds;
    const double error = predicted / s.sample.seconds - 1.0;
    std::printf("%s: predicted %.1f us, measured %.1f us (%+.0f%%)%s\n", s.sample.label.c_str(),
                predicted * 1e6, s.sample.seconds * 1e6, 100 * error,
                s.outside.empty() ? "" : ", marked outside the model");
    SCOPED_TRACE(s.sample.label + ": predicted " + std::to_string(predicted * 1e6) +
                 " us, measured " + std::to_string(s.sample.seconds * 1e6) + " us");
    if (s.outside.empty()) {
      EXPECT_LE(std::abs(error), 0.25);
    } else {
      EXPECT_GT(std::abs(error), 0.25) << "marked outside the model (" << s.outside
                                       << "), but within a quarter: take the mark away";
    }
  }
}

// Every preset prices the CNN at 64 a replica in what recorded GPU runs support: thousands to
// hundreds of thousands of images/s on one GPU, not millions (the FLOPs at a peak said 13
// million on one H100).
TEST(ComputeReplay, EveryPresetPricesAStepInWhatRecordedRunsSupport) {
  for (const auto& entry : std::filesystem::directory_iterator(timing::default_topology_folder())) {
    const timing::Topology t = timing::read_topology(entry.path());
    SCOPED_TRACE(t.id);
    ASSERT_TRUE(t.compute.given());
    const core::ModelledCompute c = core::modelled_compute(core::ModelKind::kCnn, {}, 64, t);
    EXPECT_TRUE(c.from_kernels);
    const double images_per_second = 64 / c.seconds;
    EXPECT_GT(images_per_second, 1e3);
    EXPECT_LT(images_per_second, 1e6);
  }
}

}  // namespace
}  // namespace mirrorlab::testing

namespace mirrorlab::testing {
namespace {

// The list's matrix products are the layers' arithmetic (core/nn/training_flops.h counts the same
// products from the layers' shapes), and a batch's list is the affine carry of 1 and 2: its
// FLOPs and bytes at 3 are 1's plus twice the step from 1 to 2.
TEST(StepKernels, ItsProductsAreTheLayersArithmeticAndABatchIsAffine) {
  for (core::ModelKind model : {core::ModelKind::kCnn, core::ModelKind::kMlp}) {
    SCOPED_TRACE(core::to_string(model));
    const core::TrainingFlops f = core::training_flops(model, {});
    double products = 0;
    for (const timing::KernelWork& k : core::step_kernels(model, {}, 64)) {
      if (k.name == "gemm") products += k.flops;
    }
    EXPECT_NEAR(products / ((f.forward + f.backward) * 64), 1.0, 0.02);
    const auto one = core::step_kernels(model, {}, 1);
    const auto two = core::step_kernels(model, {}, 2);
    const auto three = core::step_kernels(model, {}, 3);
    ASSERT_EQ(one.size(), three.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      EXPECT_DOUBLE_EQ(three[i].flops, one[i].flops + 2 * (two[i].flops - one[i].flops));
      EXPECT_DOUBLE_EQ(three[i].bytes, one[i].bytes + 2 * (two[i].bytes - one[i].bytes));
    }
  }
  EXPECT_THROW(core::step_kernels(core::ModelKind::kCnn, {}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace mirrorlab::testing
