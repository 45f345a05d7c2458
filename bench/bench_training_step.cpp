// Time per training step: a plain single-device loop against MirroredStrategy on 1 and 2
// CPU-backed virtual GPUs (same global batch, same model, same kernels), and the all-reduce
// of one replica's gradients. Wall-clock time: the work runs on the devices' threads.
//   build/bench/bench_training_step --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <numeric>

#include "core/io/synthetic_dataset.h"
#include "core/nn/cpu/kernels_cpu.h"
#include "core/session/step_control.h"
#include "core/session/step_recorder.h"
#include "core/strategy/mirrored_strategy.h"
#include "core/strategy/plain_trainer.h"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab {
namespace {

constexpr std::size_t kGlobalBatch = 64;

core::StrategyOptions options(int model) {
  core::StrategyOptions o;
  o.model = model == 0 ? core::ModelKind::kCnn : core::ModelKind::kMlp;
  o.optimizer.kind = core::OptimizerKind::kAdam;
  return o;
}

const core::Dataset& data() {
  static const core::Dataset d = core::synthetic_dataset(kGlobalBatch * 16);
  return d;
}

// Cycles through the 16 global batches of the synthetic set.
class Batches {
 public:
  Batches() : order_(data().size()) { std::iota(order_.begin(), order_.end(), 0u); }
  core::GlobalBatch next(std::size_t per_replica) {
    const std::size_t begin = (i_++ % 16) * kGlobalBatch;
    return {&data(), std::span(order_).subspan(begin, kGlobalBatch), per_replica};
  }

 private:
  std::vector<std::uint32_t> order_;
  std::size_t i_ = 0;
};

void set_labels(benchmark::State& state) {
  state.SetLabel(state.range(0) == 0 ? "cnn" : "mlp");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kGlobalBatch));
}

void BM_PlainSingleDeviceStep(benchmark::State& state) {
  core::set_blas_single_threaded();
  vgpu::MemoryArena arena("/plain", 1024 * vgpu::kMiB);
  core::PlainTrainer trainer(arena, options(static_cast<int>(state.range(0))));
  Batches batches;
  for (auto _ : state) benchmark::DoNotOptimize(trainer.train_step(batches.next(kGlobalBatch)));
  set_labels(state);
}

void BM_MirroredStep(benchmark::State& state) {
  core::set_blas_single_threaded();
  const int replicas = static_cast<int>(state.range(1));
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 1024);
  core::EventStore events;  // recorded as in a real run
  core::MirroredStrategy strategy(registry.logical_devices(),
                                  options(static_cast<int>(state.range(0))), &events);
  Batches batches;
  for (auto _ : state) {
    benchmark::DoNotOptimize(strategy.train_step(batches.next(kGlobalBatch / replicas)));
  }
  set_labels(state);
}

// On a noisy machine, contenders take turns in blocks of kBlock steps (the order rotates each
// iteration), so drift in the machine's speed hits all alike. Returns seconds per step of each.
std::vector<double> time_in_turns(benchmark::State& state,
                                  const std::vector<std::function<void()>>& steps) {
  constexpr int kBlock = 16;
  std::vector<double> seconds(steps.size(), 0.0);
  std::size_t first = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const std::size_t i = (first + k) % steps.size();
      const auto begin = vgpu::Clock::now();
      for (int b = 0; b < kBlock; ++b) steps[i]();
      seconds[i] += vgpu::seconds_between(begin, vgpu::Clock::now());
    }
    first = (first + 1) % steps.size();
  }
  for (double& s : seconds) s /= static_cast<double>(state.iterations()) * kBlock;
  return seconds;
}

// The 3% question: the plain loop against MirroredStrategy on 1 device. Counters: ms per step
// of each, and the mirrored overhead in percent of the plain step.
void BM_OneDeviceOverhead(benchmark::State& state) {
  core::set_blas_single_threaded();
  const core::StrategyOptions o = options(static_cast<int>(state.range(0)));
  vgpu::MemoryArena arena("/plain", 1024 * vgpu::kMiB);
  core::PlainTrainer plain(arena, o);
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(1, 1024);
  core::EventStore events;
  core::MirroredStrategy mirrored(registry.logical_devices(), o, &events);
  Batches plain_batches, mirrored_batches;
  const std::vector<double> s =
      time_in_turns(state, {[&] { plain.train_step(plain_batches.next(kGlobalBatch)); },
                            [&] { mirrored.train_step(mirrored_batches.next(kGlobalBatch)); }});
  state.counters["plain_ms"] = 1e3 * s[0];
  state.counters["mirrored_ms"] = 1e3 * s[1];
  state.counters["overhead_%"] = 100.0 * (s[1] - s[0]) / s[0];
  state.SetLabel(state.range(0) == 0 ? "cnn" : "mlp");
}

// What watching costs on 2 devices: a bare strategy against one with a free-running
// StepController attached, and one with a controller and a StepRecorder (the GUI's setup).
// Counters: ms per bare step and each watcher's overhead in percent of it.
void BM_WatchedStepOverhead(benchmark::State& state) {
  core::set_blas_single_threaded();
  const core::StrategyOptions o = options(static_cast<int>(state.range(0)));
  struct Contender {
    vgpu::DeviceRegistry registry;
    core::EventStore events;
    std::unique_ptr<core::MirroredStrategy> strategy;
    Batches batches;
  };
  std::vector<std::unique_ptr<Contender>> c;
  for (int i = 0; i < 3; ++i) {
    c.push_back(std::make_unique<Contender>());
    c[i]->registry.set_logical_device_configuration(2, 1024);
    c[i]->strategy = std::make_unique<core::MirroredStrategy>(c[i]->registry.logical_devices(), o,
                                                              &c[i]->events);
  }
  core::StepController controller, controller2;
  core::StepRecorder recorder;
  recorder.choose_layer(static_cast<int>(state.range(1)));
  c[1]->strategy->add_listener(&controller);
  c[2]->strategy->add_listener(&controller2);
  c[2]->strategy->add_listener(&recorder);
  std::vector<std::function<void()>> steps;
  for (auto& k : c) {
    steps.push_back([&k] { k->strategy->train_step(k->batches.next(kGlobalBatch / 2)); });
  }
  const std::vector<double> s = time_in_turns(state, steps);
  state.counters["bare_ms"] = 1e3 * s[0];
  state.counters["controller_%"] = 100.0 * (s[1] - s[0]) / s[0];
  state.counters["recorder_%"] = 100.0 * (s[2] - s[0]) / s[0];
  state.SetLabel(state.range(0) == 0 ? "cnn" : "mlp");
}

// The recorder's own work in one step of 2 replicas, done here on one thread (in training each
// replica does its half on its own thread): split the batch, norms and the chosen layer after
// backward, the reduced layer after the all-reduce, fingerprints, and publishing the record.
// Compare with BM_MirroredStep/model:0/replicas:2.
void BM_RecorderWorkPerStep(benchmark::State& state) {
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 1024);
  core::MirroredStrategy strategy(registry.logical_devices(), options(0));
  Batches batches;
  const core::GlobalBatch batch = batches.next(kGlobalBatch / 2);
  strategy.train_step(batch);  // gradients to read
  const auto shards = core::split_global_batch(batch.size(), 2, kGlobalBatch / 2);
  core::StepRecorder recorder;
  recorder.choose_layer(static_cast<int>(state.range(0)));
  const int steps = strategy.all_reduce().num_steps(2);
  vgpu::CollectiveStep collective;
  const core::StepStart start{1,
                              &batch,
                              &shards,
                              {&strategy.replica(0), &strategy.replica(1)},
                              strategy.all_reduce().name(),
                              steps};
  for (auto _ : state) {
    recorder.begin_step(start);
    for (core::StepBoundary b : {core::StepBoundary::kSplit, core::StepBoundary::kForward,
                                 core::StepBoundary::kBackward}) {
      for (int r = 0; r < 2; ++r) recorder.on_replica_reached(strategy.replica(r), b);
    }
    for (int i = 0; i < steps; ++i) {
      collective.index = i;
      recorder.on_collective_step(collective);
    }
    for (int r = 0; r < 2; ++r) {
      recorder.on_replica_reached(strategy.replica(r), core::StepBoundary::kUpdate);
    }
    recorder.end_step(/*completed=*/true);
  }
  state.SetLabel(state.range(0) == 0 ? "cnn, conv2d" : "cnn, dense");
}

void BM_AllReduceCnnGradients(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(1));
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 64);
  const auto algorithm =
      vgpu::make_all_reduce(state.range(0) == 0 ? vgpu::kReduceToOneName : vgpu::kRingName);
  constexpr std::size_t kCount = 693962;  // the CNN's parameters
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(replicas),
                                          std::vector<float>(kCount, 1.0f));
  std::vector<std::span<float>> spans(buffers.begin(), buffers.end());
  for (auto _ : state) {
    vgpu::all_reduce(registry.logical_devices(), spans, *algorithm, vgpu::ReduceOp::kSum);
  }
  state.SetLabel(algorithm->name());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kCount * sizeof(float)));
}

BENCHMARK(BM_PlainSingleDeviceStep)
    ->ArgName("model")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MirroredStep)
    ->ArgNames({"model", "replicas"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OneDeviceOverhead)
    ->ArgName("model")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0);
BENCHMARK(BM_WatchedStepOverhead)
    ->ArgNames({"model", "layer"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(5.0);
BENCHMARK(BM_RecorderWorkPerStep)->ArgName("layer")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllReduceCnnGradients)
    ->ArgNames({"algorithm", "replicas"})
    ->ArgsProduct({{0, 1}, {2, 4}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mirrorlab

BENCHMARK_MAIN();
