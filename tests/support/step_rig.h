// Shared by the tests of stepping inside a training step: a small strategy on CPU-backed virtual
// GPUs, and a loop that runs one step in the background and acts at each of its pauses.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/session/step_control.h"
#include "core/strategy/mirrored_strategy.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::testing_rig {

using namespace std::chrono_literals;

inline core::StrategyOptions mlp_options(const std::string& all_reduce) {
  core::StrategyOptions o;
  o.model = core::ModelKind::kMlp;
  o.optimizer.kind = core::OptimizerKind::kSgd;
  o.optimizer.learning_rate = 0.05f;
  o.all_reduce = all_reduce;
  o.seed = 3;
  return o;
}

// Devices, events and a strategy on `replicas` CPU-backed virtual GPUs, with a few examples.
struct Rig {
  Rig(int replicas, const std::string& all_reduce)
      : data(core::synthetic_dataset(40)), order(data.size()) {
    std::iota(order.begin(), order.end(), 0u);
    registry.set_logical_device_configuration(replicas, 128);
    strategy = std::make_unique<core::MirroredStrategy>(registry.logical_devices(),
                                                        mlp_options(all_reduce), &events);
  }
  // Examples [begin, begin + count) as a global batch of 4 examples per replica.
  core::GlobalBatch batch(std::size_t begin, std::size_t count) {
    return core::GlobalBatch{&data, std::span(order).subspan(begin, count), 4};
  }
  std::size_t events_of(core::Phase phase) {
    std::size_t n = 0;
    for (const auto& e : events.snapshot()) n += e.phase == phase;
    return n;
  }

  core::Dataset data;
  std::vector<std::uint32_t> order;
  vgpu::DeviceRegistry registry;
  core::EventStore events;
  std::unique_ptr<core::MirroredStrategy> strategy;
};

// Runs one training step in the background; while it runs, calls `at_pause` at every pause
// (which then advances). Returns the pauses seen. Fails the test if a pause never comes.
template <class AtPause>
inline std::vector<core::PausePoint> step_through(Rig& rig, core::StepController& controller,
                                                  const core::GlobalBatch& batch,
                                                  AtPause at_pause) {
  std::future<void> step = std::async(std::launch::async, [&] { rig.strategy->train_step(batch); });
  std::vector<core::PausePoint> seen;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (step.wait_for(0ms) != std::future_status::ready) {
    if (std::chrono::steady_clock::now() > deadline) {
      controller.stop();  // do not hang the test binary; the failure says what happened
      ADD_FAILURE() << "the step neither paused nor finished within 30 s";
      break;
    }
    if (!controller.wait_until_paused(10ms)) continue;
    const std::optional<core::PausePoint> at = controller.paused_at();
    if (!at) continue;
    seen.push_back(*at);
    at_pause(*at);
  }
  step.get();  // rethrows what the step threw
  return seen;
}

// Parameters of the tests that run on both algorithms with 2 and 3 replicas.
struct AlgorithmCase {
  std::string all_reduce;
  int replicas;
};
inline const auto kAlgorithmCases =
    ::testing::Values(AlgorithmCase{"ring", 2}, AlgorithmCase{"ring", 3},
                      AlgorithmCase{"reduce-to-one", 2}, AlgorithmCase{"reduce-to-one", 3});
inline std::string case_name(const ::testing::TestParamInfo<AlgorithmCase>& info) {
  std::string name = info.param.all_reduce + "_" + std::to_string(info.param.replicas);
  for (char& ch : name) ch = ch == '-' ? '_' : ch;
  return name;
}

}  // namespace mirrorlab::testing_rig
