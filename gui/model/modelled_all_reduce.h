// The all-reduces the timing model can play on a machine, step by step, for the All-reduce
// panel (and the --model-allreduce flag): NCCL's Ring and Tree where NCCL can run (one GPU per
// rank), NVLS where the machine has NVSwitch multicast, and mirrorlab's own algorithms by the
// schedules of the table of algorithms. Pure data: nothing here draws or runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gui/model/topology_catalog.h"
#include "timing/nccl_model.h"
#include "timing/schedule.h"
#include "timing/topology.h"

namespace mirrorlab::gui {

struct ModelledAlgorithm {
  std::string id;     // "nccl-ring", "nccl-tree", "nccl-nvls", or the table's name
  std::string title;  // "NCCL Ring", ..., or the table's name
  std::optional<timing::NcclAlgorithm> nccl;  // set for NCCL's
};

// Every id there is, on any machine (the flag's choices).
std::vector<std::string> modelled_algorithm_ids();
// Those that can be played on `machine`, NCCL's first.
std::vector<ModelledAlgorithm> modelled_algorithms(const timing::Topology& machine);
// `id` on `machine`, or nullopt with *why saying what can be played there instead.
std::optional<ModelledAlgorithm> find_modelled_algorithm(const timing::Topology& machine,
                                                         const std::string& id, std::string* why);

struct ModelledAllReduce {
  ModelledAlgorithm algorithm;
  double bytes = 0;           // per GPU
  timing::Schedule schedule;  // on all of the machine's GPUs
  timing::Estimate estimate;  // timing::estimate(schedule, machine): alpha-beta, step by step
  // NCCL's algorithms: NCCL's own model of this algorithm at its fastest protocol (pipelined, so
  // not the sum of the steps), and what NCCL's model picks among all at this size.
  std::optional<timing::NcclCost> nccl_own, nccl_picks;
};

// Throws std::invalid_argument where the machine cannot price it (a topology file without the
// bandwidths its links need).
ModelledAllReduce model_all_reduce(const timing::Topology& machine,
                                   const ModelledAlgorithm& algorithm, double bytes);

// The command line's choice of a machine (`machine`: an id of `machines`), a modelled all-reduce
// on it ("" for none) of `bytes` per GPU, shown after `step` of its steps: "" when they fit
// together, else what is wrong, naming the flag (--topology, --model-allreduce, --model-step).
std::string check_model_choice(const TopologyCatalog& machines, const std::string& machine,
                               const std::string& algorithm, double bytes, int step);

}  // namespace mirrorlab::gui
