// The Compare panel's predictions as data, computed when what they depend on changes (a new
// measurement, another machine chosen, a new fit), never every frame: the model beside each
// measurement made here (from this machine's fit), and each algorithm's predicted time on a chosen
// machine by size with NCCL's choice. Drawn by compare_panel.cpp and compare_machine_view.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/session/algorithm_comparison.h"
#include "gui/model/topology_catalog.h"
#include "timing/fit.h"
#include "timing/nccl_model.h"
#include "timing/topology.h"

namespace mirrorlab::gui {

// ---- on a chosen machine, all of its GPUs -----------------------------------------------------
struct SizePrediction {
  double bytes = 0;  // per GPU
  // mirrorlab's algorithms in the table's order that can run there (cannot_run_on_machine()),
  // timing::estimate() of each schedule (nothing measured: `measured` is 0).
  std::vector<timing::Prediction> algorithms;
  std::optional<timing::NcclCost> nccl;  // what NCCL's model picks; absent where NCCL cannot run
};
// The sizes the machine view lists: 4 KiB to 1 GiB, each 4 times the one before.
std::vector<double> machine_view_sizes();
// Throws std::invalid_argument where the machine cannot price a schedule (a link without a
// bandwidth in a topology file).
std::vector<SizePrediction> predict_on_machine(const timing::Topology& machine,
                                               const std::vector<double>& sizes);
// Each of mirrorlab's algorithms that cannot run on all of `machine`'s GPUs, as a sentence
// saying why ("one-shot cannot run on pcie-2: ..."): predict_on_machine leaves them out.
std::vector<std::string> cannot_run_on_machine(const timing::Topology& machine);
// "Ring LL128": the algorithm and protocol NCCL's model picks.
std::string nccl_pick_text(const timing::NcclCost& cost);

// ---- beside what was measured here ------------------------------------------------------------
struct MeasuredPredictions {
  std::string problem;  // why there are no predictions ("" when there are)
  // Each available algorithm's all-reduce of the training step's gradients on the devices here,
  // measured (the median step's) beside predicted.
  std::vector<timing::Prediction> training;
  std::vector<timing::Prediction> sweep;  // each row of the size sweep
};
// With this machine's fit (`fit`, as the catalog has it) on `devices` devices.
MeasuredPredictions predict_measured(const core::AlgorithmComparison& measured, int devices,
                                     const ModelMachine& fit);
// The prediction for `algorithm` at `bytes` among `rows`, or nullptr.
const timing::Prediction* find_prediction(const std::vector<timing::Prediction>& rows,
                                          const std::string& algorithm, double bytes);

}  // namespace mirrorlab::gui
