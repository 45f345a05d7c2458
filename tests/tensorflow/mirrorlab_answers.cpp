// mirrorlab's side of scripts/check-tensorflow: reads the cases as JSON on stdin and answers, on
// stdout, what mirrorlab's own code does for each, so the check can put TensorFlow's answer
// beside it. Every answer comes from running the code that training runs:
//   {"split": [{"examples": 1000, "replicas": 3, "batch_per_replica": 16}, ...]}
//     -> {"split": [[[16, 16, 16], ..., [14, 14, 12]], ...]}: per step, each replica's examples,
//        seen by a step listener on a real fit() of an MLP on CPU-backed virtual GPUs;
//   {"loss_scale": [{"shards": [14, 14, 12], "scaling": "replica-mean"}, ...]}
//     -> {"loss_scale": [[s0, s1, s2], ...]}: what each replica multiplies its summed loss by.
#include <cstdio>
#include <exception>
#include <iostream>
#include <numeric>
#include <vector>

#include "core/io/synthetic_dataset.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "nlohmann/json.hpp"
#include "virtualgpu/device_registry.h"

namespace {

using namespace mirrorlab;

class ShardSizes : public core::StepListener {
 public:
  core::StepNeeds begin_step(const core::StepStart& start) override {
    std::vector<std::size_t> sizes;
    for (const core::Shard& s : *start.shards) sizes.push_back(s.count);
    steps.push_back(sizes);
    return {};
  }
  std::vector<std::vector<std::size_t>> steps;
};

nlohmann::json split(const nlohmann::json& c) {
  const std::size_t examples = c.at("examples");
  const int replicas = c.at("replicas");
  const core::Dataset data = core::synthetic_dataset(examples);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 64);
  core::StrategyOptions options;
  options.model = core::ModelKind::kMlp;
  options.check_sync = false;
  core::MirroredStrategy strategy(registry.logical_devices(), options);
  ShardSizes sizes;
  strategy.add_listener(&sizes);
  core::FitOptions fit;
  fit.epochs = 1;
  fit.batch_per_replica = c.at("batch_per_replica");
  core::fit(strategy, data, nullptr, fit);
  return sizes.steps;
}

nlohmann::json loss_scale(const nlohmann::json& c) {
  const std::vector<std::size_t> shards = c.at("shards");
  const core::LossScaling scaling = core::parse_loss_scaling(c.at("scaling").get<std::string>());
  const std::size_t global = std::accumulate(shards.begin(), shards.end(), std::size_t{0});
  nlohmann::json scales = nlohmann::json::array();
  for (std::size_t s : shards) {
    scales.push_back(core::loss_scale(scaling, s, static_cast<int>(shards.size()), global));
  }
  return scales;
}

}  // namespace

int main() {
  try {
    const nlohmann::json cases = nlohmann::json::parse(std::cin);
    nlohmann::json answers = nlohmann::json::object();
    for (const auto& [kind, answer] :
         {std::pair{"split", &split}, std::pair{"loss_scale", &loss_scale}}) {
      if (!cases.contains(kind)) continue;
      answers[kind] = nlohmann::json::array();
      for (const nlohmann::json& c : cases.at(kind)) answers[kind].push_back(answer(c));
    }
    std::cout << answers.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mirrorlab_answers: %s\n", e.what());
    return 1;
  }
}
