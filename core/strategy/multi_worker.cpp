// What several workers add to a MirroredStrategy (TensorFlow's MultiWorkerMirroredStrategy):
// agreeing at the start, worker 0's variables for everyone, the statistics summed over the
// workers, and every worker's weights compared after a step. The all-reduce across workers is
// vgpu::HierarchicalAllReduce; what moves the data is the vgpu::WorkerGroup (MPI).
#include <cstdio>
#include <stdexcept>

#include "core/nn/ops.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

void MirroredStrategy::tell_workers(const std::string& activity) {
  if (workers_ != nullptr) workers_->set_activity(activity);
}

void MirroredStrategy::check_workers_agree() {
  // What must be equal for the replicas of every worker to be mirrors: how many there are per
  // worker (the global batch and its split assume it), and the model they train.
  const std::string mine = std::to_string(devices_.size()) + " " + model_name(options_);
  const std::vector<std::string> all = workers_->all_gather(mine);
  for (int w = 0; w < static_cast<int>(all.size()); ++w) {
    if (all[static_cast<std::size_t>(w)] != all[0]) {
      throw std::invalid_argument(
          "the workers differ: worker 0 has " + all[0] + " and worker " + std::to_string(w) +
          " has " + all[static_cast<std::size_t>(w)] +
          " (devices and model): every worker needs as many devices and the same model");
    }
  }
}

void MirroredStrategy::broadcast_from_worker_0() {
  Replica& first = *replicas_[0];
  Model& model = first.model();
  const auto begin = vgpu::Clock::now();
  if (first.ops().host_accessible()) {
    workers_->broadcast(model.params(), 0);
  } else {
    std::vector<float> host = model.params_to_host();
    workers_->broadcast(std::span<float>(host), 0);
    first.device().stream().enqueue([&first, &host] {
      first.ops().copy_to_device(first.model().params().data(), host.data(),
                                 host.size() * sizeof(float));
      first.ops().synchronize();
    });
    first.device().stream().synchronize();
  }
  if (workers_->rank() == 0) return;  // worker 0 sends; the others' replica 0 received
  const RunEvent event{0,     Phase::kBroadcastInit, 0,
                       begin, vgpu::Clock::now(),    model.num_params() * sizeof(float)};
  for (StepListener* l : listeners_) l->on_phase(event);
}

LossStats MirroredStrategy::sum_over_workers(const LossStats& mine) {
  if (workers_ == nullptr) return mine;
  // Counts as doubles: exact up to 2^53 examples.
  double values[4] = {mine.loss_sum, static_cast<double>(mine.correct),
                      static_cast<double>(mine.correct_top5), static_cast<double>(mine.count)};
  workers_->all_reduce_sum(std::span<double>(values));
  LossStats total;
  total.loss_sum = values[0];
  total.correct = static_cast<std::int64_t>(values[1]);
  total.correct_top5 = static_cast<std::int64_t>(values[2]);
  total.count = static_cast<std::int64_t>(values[3]);
  return total;
}

void MirroredStrategy::check_workers_in_sync() {
  char mine[24];
  std::snprintf(mine, sizeof mine, "%016llx",
                static_cast<unsigned long long>(replicas_[0]->last_fingerprint()));
  const std::vector<std::string> all = workers_->all_gather(mine);
  std::string differing;
  for (int w = 1; w < static_cast<int>(all.size()); ++w) {
    if (all[static_cast<std::size_t>(w)] != all[0]) {
      differing += " worker " + std::to_string(w) + " (fingerprint " +
                   all[static_cast<std::size_t>(w)] + ")";
    }
  }
  if (!differing.empty()) {
    throw ReplicasOutOfSync("workers out of sync after step " + std::to_string(step_) +
                            ": the weights of" + differing + " differ from worker 0's (" + all[0] +
                            "). Every worker must apply the same update: the all-reduce across "
                            "workers or the update is broken.");
  }
  ++workers_found_in_sync_;
}

}  // namespace mirrorlab::core
