#include "gui/model/modelled_all_reduce.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/session/text/console_text.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::gui {
namespace {

constexpr timing::NcclAlgorithm kNcclAlgorithms[] = {
    timing::NcclAlgorithm::kRing, timing::NcclAlgorithm::kTree, timing::NcclAlgorithm::kNvls};

// "nccl-ring": the table's name of NCCL, then NCCL's own name of the algorithm.
std::string nccl_id(timing::NcclAlgorithm a) {
  std::string name = to_string(a);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::string(vgpu::kNcclName) + "-" + name;
}

ModelledAlgorithm nccl_entry(timing::NcclAlgorithm a) {
  return {nccl_id(a), std::string("NCCL ") + to_string(a), a};
}

// The algorithms NCCL's model considers on `machine` (none where NCCL cannot run there).
std::vector<timing::NcclAlgorithm> nccl_algorithms_on(const timing::Topology& machine) {
  std::vector<timing::NcclAlgorithm> found;
  if (!machine.has_nccl || machine.ranks() < 2) return found;
  try {
    for (const timing::NcclCost& c :
         timing::nccl_costs(machine.nccl, machine.ranks(), machine.nodes, 1 << 20)) {
      if (std::find(found.begin(), found.end(), c.algorithm) == found.end()) {
        found.push_back(c.algorithm);
      }
    }
  } catch (const std::invalid_argument&) {
    found.clear();  // a machine NCCL's model cannot price: none of NCCL's to play
  }
  return found;
}

// "" where mirrorlab's algorithm `name` can run on all of `machine`'s GPUs; else why not
// (timing::cannot_run: the one-shot without peer access, or across nodes).
std::string own_cannot_run(const timing::Topology& machine, const std::string& name) {
  const vgpu::AllReduceAlgorithm* row = vgpu::find_all_reduce(name);
  return row == nullptr ? "" : vgpu::cannot_run_on(*row, machine, machine.ranks());
}

}  // namespace

std::vector<std::string> modelled_algorithm_ids() {
  std::vector<std::string> ids;
  for (timing::NcclAlgorithm a : kNcclAlgorithms) ids.push_back(nccl_id(a));
  for (std::string& name : vgpu::modelled_all_reduce_names()) ids.push_back(std::move(name));
  return ids;
}

std::vector<ModelledAlgorithm> modelled_algorithms(const timing::Topology& machine) {
  std::vector<ModelledAlgorithm> out;
  const std::vector<timing::NcclAlgorithm> nccl = nccl_algorithms_on(machine);
  for (timing::NcclAlgorithm a : kNcclAlgorithms) {
    if (std::find(nccl.begin(), nccl.end(), a) != nccl.end()) out.push_back(nccl_entry(a));
  }
  for (const std::string& name : vgpu::modelled_all_reduce_names()) {
    if (own_cannot_run(machine, name).empty()) out.push_back({name, name, {}});
  }
  return out;
}

std::optional<ModelledAlgorithm> find_modelled_algorithm(const timing::Topology& machine,
                                                         const std::string& id, std::string* why) {
  std::string ids;
  for (const ModelledAlgorithm& a : modelled_algorithms(machine)) {
    if (a.id == id) return a;
    ids.append(ids.empty() ? "" : ", ").append(a.id);
  }
  if (why != nullptr) {
    const std::vector<std::string> all = modelled_algorithm_ids();
    const bool known = std::find(all.begin(), all.end(), id) != all.end();
    const std::string own = known ? own_cannot_run(machine, id) : "";
    *why = (!known         ? "no modelled all-reduce \"" + id + "\""
            : !own.empty() ? id + " " + own
                           : id + " cannot be played on " + machine.id +
                                 (machine.has_nccl ? " (NVLS needs NVSwitch multicast, more than 2 "
                                                     "GPUs and one node)"
                                                   : " (NCCL needs one GPU per rank)")) +
           ": on " + machine.id + " choose " + ids;
  }
  return std::nullopt;
}

ModelledAllReduce model_all_reduce(const timing::Topology& machine,
                                   const ModelledAlgorithm& algorithm, double bytes) {
  ModelledAllReduce m;
  m.algorithm = algorithm;
  m.bytes = bytes;
  const int ranks = machine.ranks();
  if (!algorithm.nccl) {
    const vgpu::AllReduceAlgorithm* row = vgpu::find_all_reduce(algorithm.id);
    if (row == nullptr || row->schedule == nullptr) {
      throw std::invalid_argument("no schedule for " + algorithm.id);
    }
    m.schedule = row->schedule(ranks, bytes, 0);
  } else {
    switch (*algorithm.nccl) {
      case timing::NcclAlgorithm::kRing:
        m.schedule = timing::ring_schedule(ranks, bytes);
        break;
      case timing::NcclAlgorithm::kTree:
        m.schedule = timing::tree_schedule(ranks, machine.gpus_per_node, bytes);
        break;
      case timing::NcclAlgorithm::kNvls:
        m.schedule = timing::nvls_schedule(ranks, bytes);
        break;
    }
    const std::vector<timing::NcclCost> costs =
        timing::nccl_costs(machine.nccl, ranks, machine.nodes, bytes);
    for (const timing::NcclCost& c : costs) {
      if (c.algorithm == *algorithm.nccl && (!m.nccl_own || c.time_us < m.nccl_own->time_us)) {
        m.nccl_own = c;
      }
    }
    m.nccl_picks = timing::nccl_choice(machine.nccl, ranks, machine.nodes, bytes);
  }
  m.estimate = timing::estimate(m.schedule, machine);
  return m;
}

std::string check_model_choice(const TopologyCatalog& machines, const std::string& machine_id,
                               const std::string& algorithm, double bytes, int step) {
  const ModelMachine* machine = machines.find(machine_id);
  if (machine == nullptr) {
    std::string ids;
    for (const ModelMachine& m : machines.machines())
      ids.append(ids.empty() ? "" : ", ").append(m.id);
    return "--topology " + machine_id + ": no such machine: choose " + ids +
           (machines.presets_problem().empty() ? "" : " (" + machines.presets_problem() + ")");
  }
  if (!machine->topology) return "--topology " + machine_id + ": " + machine->problem;
  if (algorithm.empty()) {
    return step > 0 ? "--model-step needs --model-allreduce: the steps of which all-reduce?" : "";
  }
  std::string why;
  const std::optional<ModelledAlgorithm> chosen =
      find_modelled_algorithm(*machine->topology, algorithm, &why);
  if (!chosen) return "--model-allreduce " + algorithm + ": " + why;
  try {
    const ModelledAllReduce m = model_all_reduce(*machine->topology, *chosen, bytes);
    const int steps = static_cast<int>(m.estimate.steps.size());
    if (step > steps) {
      return "--model-step " + std::to_string(step) + ": " + chosen->title + " on " + machine_id +
             " has " + core::counted(steps, "step") + ": give 0 (before it) to " +
             std::to_string(steps);
    }
  } catch (const std::exception& e) {
    return "--topology " + machine_id + ": " + e.what();
  }
  return "";
}

}  // namespace mirrorlab::gui
