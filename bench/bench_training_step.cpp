// Time per training step: a plain single-device loop against MirroredStrategy on 1 and 2
// CPU-backed virtual GPUs (same global batch, same model, same kernels), and the all-reduce
// of one replica's gradients. Wall-clock time: the work runs on the devices' threads.
//   build/bench/bench_training_step --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <numeric>

#include "core/kernels_cpu.h"
#include "core/mirrored_strategy.h"
#include "core/plain_trainer.h"
#include "core/synthetic_dataset.h"
#include "virtualgpu/device_registry.h"

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

void BM_AllReduceCnnGradients(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(1));
  vgpu::DeviceRegistry registry;
  registry.set_logical_device_configuration(replicas, 64);
  const auto algorithm = vgpu::make_all_reduce(state.range(0) == 0 ? "reduce-to-one" : "ring");
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

BENCHMARK(BM_PlainSingleDeviceStep)->ArgName("model")->Arg(0)->Arg(1)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MirroredStep)->ArgNames({"model", "replicas"})->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduceCnnGradients)->ArgNames({"algorithm", "replicas"})
    ->ArgsProduct({{0, 1}, {2, 4}})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mirrorlab

BENCHMARK_MAIN();
