#include "core/session/step_by_step.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "core/nn/kernel_elements_train.h"
#include "core/session/step_recorder.h"

namespace mirrorlab::core {

std::vector<double> per_example_loss(std::span<const float> logits,
                                     std::span<const std::uint8_t> labels, int classes) {
  if (classes <= 0 || logits.size() != labels.size() * static_cast<std::size_t>(classes)) {
    throw std::invalid_argument("per_example_loss: " + std::to_string(logits.size()) +
                                " logits are not " + std::to_string(labels.size()) + " rows of " +
                                std::to_string(classes));
  }
  std::vector<double> out(labels.size());
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] >= classes) {
      throw std::invalid_argument("label " + std::to_string(labels[r]) + " of example " +
                                  std::to_string(r) + " is not a class of " +
                                  std::to_string(classes));
    }
    out[r] = elements::softmax_cross_entropy_row(logits.data(), labels.data(), static_cast<int>(r),
                                                 classes, 0.0F, nullptr)
                 .loss;
  }
  return out;
}

StepByStep::StepByStep(MirroredStrategy& strategy, const GlobalBatch& batch)
    : strategy_(&strategy) {
  controller_.pause_at_phases(true);
  strategy.add_listener(&controller_);
  thread_ = std::thread([this, batch] {
    try {
      // The fit loop's step (MirroredStrategy::train_step) as strategy.run's function: the same
      // weights, with each replica's results kept.
      results_ = strategy_->run(batch, [](ReplicaContext& ctx) {
        LossStats stats = ctx.forward_and_backward();
        ctx.apply_gradients();
        return stats;
      });
    } catch (...) {
      failure_ = std::current_exception();
    }
    done_.store(true, std::memory_order_release);
  });
  wait();
}

StepByStep::~StepByStep() {
  controller_.run_freely();
  if (thread_.joinable()) thread_.join();
  strategy_->remove_listener(&controller_);
}

void StepByStep::wait() {
  for (;;) {
    if (std::optional<PausePoint> point = controller_.paused_at()) {
      held_ = std::move(point);
      return;
    }
    if (done_.load(std::memory_order_acquire)) {
      held_.reset();
      if (thread_.joinable()) thread_.join();
      if (failure_) std::rethrow_exception(failure_);
      return;
    }
    controller_.wait_until_paused(std::chrono::milliseconds(2));
  }
}

void StepByStep::advance() {
  if (ended()) throw std::logic_error("the step has ended: start another");
  held_.reset();
  controller_.advance();
  wait();
}

void StepByStep::advance_to(StepBoundary boundary) {
  do {
    advance();
  } while (held_ && held_->boundary != boundary);
}

const std::vector<LossStats>& StepByStep::finish() {
  if (!ended()) {
    held_.reset();
    controller_.run_freely();
    wait();
  }
  if (failure_) std::rethrow_exception(failure_);
  return results_;
}

int StepByStep::replicas() const { return strategy_->num_local_replicas(); }

Replica& StepByStep::held_replica(int replica) {
  if (!held_) throw std::logic_error("the step has ended: its replicas are no longer held");
  if (replica < 0 || replica >= replicas()) {
    throw std::invalid_argument("no replica " + std::to_string(replica) + ": " +
                                (replicas() == 1
                                     ? std::string("the one replica is 0")
                                     : "the replicas are 0 to " + std::to_string(replicas() - 1)));
  }
  return strategy_->replica(replica);
}

std::vector<float> StepByStep::images(int replica) {
  Replica& r = held_replica(replica);
  const std::span<const float> v = read_device_values(r.ops(), r.images().span(), scratch_);
  return {v.begin(), v.end()};
}

std::vector<std::uint8_t> StepByStep::labels(int replica) {
  const std::span<const std::uint8_t> v = held_replica(replica).labels();
  return {v.begin(), v.end()};
}

std::vector<float> StepByStep::logits(int replica) {
  Replica& r = held_replica(replica);
  if (held_->boundary == StepBoundary::kSplit) {
    throw std::logic_error("no logits yet: the replicas are held before forward");
  }
  const std::span<const float> v = read_device_values(r.ops(), r.model().logits().span(), scratch_);
  return {v.begin(), v.end()};
}

std::vector<float> StepByStep::gradients(int replica) {
  Replica& r = held_replica(replica);
  if (held_->boundary == StepBoundary::kSplit || held_->boundary == StepBoundary::kForward) {
    throw std::logic_error("no gradients yet: the replicas are held before backward");
  }
  const std::span<const float> v = read_device_values(r.ops(), r.model().grads(), scratch_);
  return {v.begin(), v.end()};
}

std::vector<float> StepByStep::weights(int replica) {
  Replica& r = held_replica(replica);
  const std::span<const float> v = read_device_values(r.ops(), r.model().params(), scratch_);
  return {v.begin(), v.end()};
}

std::uint64_t StepByStep::fingerprint(int replica) {
  return held_replica(replica).model().params_fingerprint();
}

void StepByStep::set_gradients(int replica, std::span<const float> values) {
  Replica& r = held_replica(replica);
  if (held_->boundary != StepBoundary::kBackward &&
      held_->boundary != StepBoundary::kAllReduceStep) {
    throw std::logic_error(
        "gradients can be changed after backward and between the all-reduce's steps only");
  }
  const std::span<float> grads = r.model().grads();
  if (values.size() != grads.size()) {
    throw std::invalid_argument("replica " + std::to_string(replica) + " has " +
                                std::to_string(grads.size()) + " gradients, not " +
                                std::to_string(values.size()));
  }
  if (r.ops().host_accessible()) {
    std::copy(values.begin(), values.end(), grads.begin());
  } else {
    r.ops().copy_to_device(grads.data(), values.data(), values.size_bytes());
  }
}

}  // namespace mirrorlab::core
