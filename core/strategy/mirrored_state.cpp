// The strategy's state for checkpoints: taken from replica 0, given to every replica.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {
namespace {

std::string slot_names(const std::vector<OptimizerSlot>& slots) {
  std::string names;
  for (const OptimizerSlot& s : slots) names += (names.empty() ? "" : ", ") + s.name;
  return names.empty() ? "none" : names;
}

// Whether `state` fits `replica`'s model and optimizer; what differs if not.
std::string mismatch(const ReplicaState& state, Replica& replica) {
  Model& model = replica.model();
  if (state.params.size() != model.num_params()) {
    return "it holds " + std::to_string(state.params.size()) + " weights; this model has " +
           std::to_string(model.num_params());
  }
  const std::vector<OptimizerSlot> slots = replica.optimizer().slots();
  std::vector<OptimizerSlot> given;
  for (const ReplicaState::Slot& s : state.slots) given.push_back({s.name, nullptr, 0});
  bool same = slots.size() == state.slots.size();
  for (std::size_t i = 0; same && i < slots.size(); ++i)
    same = slots[i].name == state.slots[i].name;
  if (!same) {
    return "its optimizer slots are " + slot_names(given) + "; the " + replica.optimizer().name() +
           " optimizer keeps " + slot_names(slots);
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (state.slots[i].values.size() != slots[i].size) {
      return "its optimizer slot " + slots[i].name + " holds " +
             std::to_string(state.slots[i].values.size()) + " values; this optimizer's holds " +
             std::to_string(slots[i].size);
    }
  }
  return "";
}

}  // namespace

ReplicaState MirroredStrategy::state() {
  Replica& primary = *replicas_[0];
  ReplicaState state;
  state.params = primary.model().params_to_host();
  for (const OptimizerSlot& slot : primary.optimizer().slots()) {
    ReplicaState::Slot copy{slot.name, std::vector<float>(slot.size)};
    primary.ops().copy_to_host(copy.values.data(), slot.values, slot.size * sizeof(float));
    state.slots.push_back(std::move(copy));
  }
  state.progress = primary.optimizer().progress();
  return state;
}

void MirroredStrategy::restore(const ReplicaState& state, std::int64_t steps_done) {
  if (const std::string problem = mismatch(state, *replicas_[0]); !problem.empty()) {
    throw std::invalid_argument("the state does not fit: " + problem);
  }
  if (steps_done < 0) throw std::invalid_argument("a run cannot have made a negative step count");
  // Checked before anything changes: the progress too (the optimizer refuses a bad one).
  for (auto& r : replicas_) {
    const OptimizerProgress before = r->optimizer().progress();
    r->optimizer().restore(state.progress);
    r->optimizer().restore(before);
  }
  // Every replica copies on its own device's stream, as the initial broadcast does.
  for (auto& r : replicas_) {
    Replica* replica = r.get();
    replica->device().stream().enqueue([replica, &state] {
      replica->model().params_from_host(state.params);
      const std::vector<OptimizerSlot> slots = replica->optimizer().slots();
      for (std::size_t i = 0; i < slots.size(); ++i) {
        replica->ops().copy_to_device(slots[i].values, state.slots[i].values.data(),
                                      slots[i].size * sizeof(float));
      }
      replica->optimizer().restore(state.progress);
      replica->fingerprint_ = replica->model().params_fingerprint();
      replica->ops().synchronize();
    });
  }
  vgpu::synchronize_all(devices_);
  step_ = steps_done;
}

void MirroredStrategy::set_learning_rate(float learning_rate) {
  check_learning_rate(learning_rate);  // before any replica takes it
  // On each device's stream, where its updates read it.
  for (auto& r : replicas_) {
    Replica* replica = r.get();
    replica->device().stream().enqueue(
        [replica, learning_rate] { replica->optimizer().set_learning_rate(learning_rate); });
  }
  vgpu::synchronize_all(devices_);
  options_.optimizer.learning_rate = learning_rate;
}

}  // namespace mirrorlab::core
