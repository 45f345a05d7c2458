#include "core/strategy/faults.h"

#include <cstdio>
#include <limits>

#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

const char* to_string(FailurePhase phase) {
  switch (phase) {
    case FailurePhase::kSplit:
      return "split";
    case FailurePhase::kForward:
      return "forward";
    case FailurePhase::kBackward:
      return "backward";
    case FailurePhase::kAllReduce:
      return "all-reduce";
  }
  return "?";
}

FailurePhase parse_failure_phase(std::string_view name) {
  for (FailurePhase p : {FailurePhase::kSplit, FailurePhase::kForward, FailurePhase::kBackward,
                         FailurePhase::kAllReduce}) {
    if (name == to_string(p)) return p;
  }
  throw std::invalid_argument("'" + std::string(name) +
                              "' is not a phase a device can fail in: split, forward, backward "
                              "or all-reduce");
}

std::string FaultPlan::describe() const {
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  for (const SlowDevice& s : slow) {
    char factor[32];
    std::snprintf(factor, sizeof factor, "%g", s.factor);
    add("/gpu:" + std::to_string(s.device) + " computes " + factor + "x slower");
  }
  for (const DeviceFailure& f : failures) {
    add("/gpu:" + std::to_string(f.device) + " fails in step " + std::to_string(f.step) + " (" +
        to_string(f.phase) + ")");
  }
  for (const NanInGradient& n : nans) {
    add("a NaN in the gradient of /gpu:" + std::to_string(n.device) + " in step " +
        std::to_string(n.step));
  }
  return text;
}

DeviceFailed::DeviceFailed(std::string device, std::int64_t step, std::string during)
    : std::runtime_error(device + " failed in step " + std::to_string(step) + ", during " + during +
                         ": an error was raised on its stream. Every replica stopped the step "
                         "and none updated its weights: they are those after step " +
                         std::to_string(step - 1)),
      device_(std::move(device)),
      step_(step),
      during_(std::move(during)) {}

void FaultInjector::attach(MirroredStrategy& strategy, FaultPlan plan) {
  const int n = strategy.num_local_replicas();
  auto check = [n](int device, const char* what) {
    if (device < 0 || device >= n) {
      throw std::invalid_argument(
          std::string(what) + " names /gpu:" + std::to_string(device) + ", but the run has " +
          std::to_string(n) + " device" +
          (n == 1 ? " (/gpu:0)" : "s (/gpu:0 to /gpu:" + std::to_string(n - 1) + ")"));
    }
  };
  for (const SlowDevice& s : plan.slow) check(s.device, "a slow device");
  for (const DeviceFailure& f : plan.failures) check(f.device, "a failing device");
  for (const NanInGradient& x : plan.nans) check(x.device, "a NaN");
  const int steps = strategy.all_reduce_steps();
  for (const DeviceFailure& f : plan.failures) {
    if (f.step < 1) throw std::invalid_argument("a device can fail in step 1 or later");
    if (f.phase == FailurePhase::kAllReduce && steps == 0) {
      throw std::invalid_argument(
          "a device cannot fail in the all-reduce of a run of one "
          "replica: there is nothing to reduce");
    }
    if (f.phase == FailurePhase::kAllReduce && f.all_reduce_step >= steps) {
      throw std::invalid_argument(
          "the " + strategy.all_reduce().name() + " all-reduce on " + std::to_string(n) +
          (n == 1 ? " replica" : " replicas") + " has " + std::to_string(steps) +
          (steps == 1 ? " step" : " steps") + ", so a device cannot fail after its step " +
          std::to_string(f.all_reduce_step + 1));
    }
  }
  // Every slowdown is checked before any is set.
  std::vector<double> factors(static_cast<std::size_t>(n), 1.0);
  for (const SlowDevice& s : plan.slow) factors[static_cast<std::size_t>(s.device)] = s.factor;
  for (int r = 0; r < n; ++r) {
    Replica& replica = strategy.replica(r);
    const double before = replica.slowdown();
    replica.set_slowdown(factors[static_cast<std::size_t>(r)]);  // throws for a CUDA device
    replica.set_slowdown(before);
  }
  detach();
  for (int r = 0; r < n; ++r)
    strategy.replica(r).set_slowdown(factors[static_cast<std::size_t>(r)]);
  strategy_ = &strategy;
  plan_ = std::move(plan);
  fired_failures_.assign(plan_.failures.size(), false);
  fired_nans_.assign(plan_.nans.size(), false);
  strategy.add_listener(this, /*before_others=*/true);
}

void FaultInjector::detach() {
  if (strategy_ == nullptr) return;
  strategy_->remove_listener(this);
  for (int r = 0; r < strategy_->num_local_replicas(); ++r) strategy_->replica(r).set_slowdown(1);
  strategy_ = nullptr;
}

int FaultInjector::fired() const {
  std::lock_guard lock(mutex_);
  return fired_;
}

StepNeeds FaultInjector::begin_step(const StepStart& start) {
  step_ = start.step + 1;
  all_reduce_steps_ = start.all_reduce_steps;
  failure_.reset();
  nan_.reset();
  for (std::size_t i = 0; i < plan_.failures.size(); ++i) {
    if (!fired_failures_[i] && plan_.failures[i].step == step_) {
      failure_ = plan_.failures[i];
      fired_failures_[i] = true;  // a device fails once; the step it fails is not counted
      break;
    }
  }
  for (std::size_t i = 0; i < plan_.nans.size(); ++i) {
    if (!fired_nans_[i] && plan_.nans[i].step == step_) {
      nan_ = plan_.nans[i];
      fired_nans_[i] = true;
      break;
    }
  }
  StepNeeds needs;
  needs.boundaries = failure_.has_value() || nan_.has_value();
  if (needs.boundaries) {
    std::lock_guard lock(mutex_);
    fired_ += (failure_ ? 1 : 0) + (nan_ ? 1 : 0);
  }
  return needs;
}

void FaultInjector::fail(Replica& replica, const std::string& during) {
  throw DeviceFailed(replica.device().name(), step_, during);
}

void FaultInjector::on_replica_reached(Replica& replica, StepBoundary boundary) {
  if (nan_ && nan_->device == replica.id() && boundary == StepBoundary::kBackward) {
    // A NaN appears in the middle of its flat gradient buffer (the largest layer's), on the
    // device, where backward() left it; the divergence check is to find and name it.
    Model& model = replica.model();
    replica.ops().fill(model.grads().data() + model.num_params() / 2, 1,
                       std::numeric_limits<float>::quiet_NaN());
  }
  if (!failure_ || failure_->device != replica.id()) return;
  const FailurePhase phase = boundary == StepBoundary::kSplit      ? FailurePhase::kSplit
                             : boundary == StepBoundary::kForward  ? FailurePhase::kForward
                             : boundary == StepBoundary::kBackward ? FailurePhase::kBackward
                                                                   : FailurePhase::kAllReduce;
  if (phase == failure_->phase && phase != FailurePhase::kAllReduce) {
    fail(replica, std::string("its ") + to_string(phase) +
                      (phase == FailurePhase::kSplit ? "" : " pass") + ", as its work ended");
  }
}

void FaultInjector::on_collective_rank_step(Replica& replica, int index, std::string_view phase) {
  if (!failure_ || failure_->device != replica.id() ||
      failure_->phase != FailurePhase::kAllReduce) {
    return;
  }
  const int at =
      failure_->all_reduce_step >= 0 ? failure_->all_reduce_step : (all_reduce_steps_ - 1) / 2;
  if (index != at) return;
  fail(replica, "the all-reduce (its step " + std::to_string(index + 1) + " of " +
                    std::to_string(all_reduce_steps_) + ", " + std::string(phase) + ")");
}

}  // namespace mirrorlab::core
