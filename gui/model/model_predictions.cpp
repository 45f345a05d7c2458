#include "gui/model/model_predictions.h"

#include <cmath>

#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::gui {
namespace {

// `algorithm` measured (or not: 0 seconds) at `bytes` on `ranks`, as the fit's samples are.
timing::AllReduceSample sample(const vgpu::AllReduceAlgorithm& algorithm, int ranks, double bytes,
                               double seconds) {
  return {std::string(algorithm.name), algorithm.schedule(ranks, bytes, 0), seconds};
}

}  // namespace

std::vector<double> machine_view_sizes() {
  std::vector<double> sizes;
  for (double bytes = 4096; bytes <= double(1 << 30); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

std::vector<SizePrediction> predict_on_machine(const timing::Topology& machine,
                                               const std::vector<double>& sizes) {
  const int ranks = machine.ranks();
  std::vector<SizePrediction> rows;
  for (const double bytes : sizes) {
    std::vector<timing::AllReduceSample> samples;
    for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
      if (a.schedule == nullptr) continue;
      timing::AllReduceSample s = sample(a, ranks, bytes, 0);
      if (timing::cannot_run(s.schedule, machine).empty()) samples.push_back(std::move(s));
    }
    SizePrediction row;
    row.bytes = bytes;
    row.algorithms = timing::predict(machine, samples);
    if (machine.has_nccl && ranks >= 2) {
      row.nccl = timing::nccl_choice(machine.nccl, ranks, machine.nodes, bytes);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> cannot_run_on_machine(const timing::Topology& machine) {
  std::vector<std::string> lines;
  for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
    if (a.schedule == nullptr) continue;
    const std::string why = vgpu::cannot_run_on(a, machine, machine.ranks());
    if (!why.empty()) lines.push_back(std::string(a.name) + " " + why + ".");
  }
  return lines;
}

std::string nccl_pick_text(const timing::NcclCost& cost) {
  return std::string(to_string(cost.algorithm)) + " " + to_string(cost.protocol);
}

MeasuredPredictions predict_measured(const core::AlgorithmComparison& measured, int devices,
                                     const ModelMachine& fit) {
  MeasuredPredictions out;
  if (!fit.topology) {
    out.problem = fit.problem;
    return out;
  }
  const timing::Topology& model = *fit.topology;
  if (model.ranks() < devices) {
    out.problem = "This machine's fit (" + model.path + ") was made on " +
                  std::to_string(model.ranks()) + " devices, fewer than the " +
                  std::to_string(devices) +
                  " here, so it cannot predict them: run 'mirrorlab "
                  "compare --fit --gpus " +
                  std::to_string(devices) + "' to fit it on as many.";
    return out;
  }
  std::vector<timing::AllReduceSample> training, sweep;
  for (const core::AlgorithmTiming& t : measured.timings) {
    const vgpu::AllReduceAlgorithm* a = vgpu::find_all_reduce(t.algorithm);
    if (!t.available || t.steps == 0 || a == nullptr || a->schedule == nullptr) continue;
    training.push_back(
        sample(*a, devices, static_cast<double>(measured.gradient_bytes), t.all_reduce_seconds));
  }
  for (const vgpu::AllReduceBenchRow& row : measured.sweep) {
    const vgpu::AllReduceAlgorithm* a = vgpu::find_all_reduce(row.algorithm);
    if (a == nullptr || a->schedule == nullptr) continue;
    sweep.push_back(sample(*a, devices, static_cast<double>(row.bytes), row.seconds));
  }
  try {
    out.training = timing::predict(model, training);
    out.sweep = timing::predict(model, sweep);
  } catch (const std::exception& e) {
    out.training.clear();
    out.sweep.clear();
    out.problem = "This machine's fit (" + model.path + ") cannot predict these: " + e.what() +
                  ". Run 'mirrorlab compare --fit' again to replace it.";
  }
  return out;
}

const timing::Prediction* find_prediction(const std::vector<timing::Prediction>& rows,
                                          const std::string& algorithm, double bytes) {
  for (const timing::Prediction& p : rows) {
    if (p.algorithm == algorithm && p.bytes == bytes) return &p;
  }
  return nullptr;
}

}  // namespace mirrorlab::gui
