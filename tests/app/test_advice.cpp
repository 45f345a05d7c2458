// The advice that goes with the typed errors of the layers below: the command line names its
// flags (app/advice.cpp), the GUI its settings (gui/model/advice.cpp). The layers below state only
// the facts (tests/virtualgpu/test_memory_arena.cpp, test_gpu_configuration.cpp, test_dataset.cpp
// check those).
#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <string>

#include "app/advice.h"
#include "app/flags/train_flags.h"
#include "core/io/dataset.h"
#include "core/strategy/divergence.h"
#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/cuda/gpu_configuration.h"
#include "virtualgpu/memory/host_memory.h"
#include "virtualgpu/memory/memory_arena.h"
#ifdef MIRRORLAB_HAVE_GUI
#include "gui/model/advice.h"
#endif

namespace mirrorlab {
namespace {

using vgpu::kMiB;

// A card whose memory runs out at `capacity` bytes, below the arena's limit.
class FullCard final : public vgpu::BlockAllocator {
 public:
  explicit FullCard(std::size_t capacity) : left_(capacity) {}
  void* allocate(std::size_t bytes) override {
    if (bytes > left_) return nullptr;
    left_ -= bytes;
    return ::operator new(bytes);
  }
  void release(void* ptr, std::size_t bytes) noexcept override {
    left_ += bytes;
    ::operator delete(ptr);
  }
  bool host_accessible() const override { return true; }
  std::string exhausted() const override { return vgpu::gpu_memory_exhausted(0); }
  vgpu::MemoryRanOut ran_out() const override { return vgpu::MemoryRanOut::kGpu; }

 private:
  std::size_t left_;
};

template <class Error, class Make>
Error caught(Make make) {
  try {
    make();
  } catch (const Error& e) {
    return e;
  }
  throw std::logic_error("nothing was thrown");
}

vgpu::OutOfMemoryError over_the_limit() {
  return caught<vgpu::OutOfMemoryError>([] {
    vgpu::MemoryArena arena("/gpu:1", 3 * kMiB);
    vgpu::Allocation a = arena.allocate(2 * kMiB, "dense/kernel");
    arena.allocate(2 * kMiB, "conv2d/kernel gradient");
  });
}

vgpu::OutOfMemoryError card_full() {
  return caught<vgpu::OutOfMemoryError>([] {
    vgpu::MemoryArena arena("/gpu:1", 1024 * kMiB, std::make_unique<FullCard>(5 * kMiB));
    vgpu::Allocation a = arena.allocate(4 * kMiB, "dense/kernel");
    arena.allocate(2 * kMiB, "conv2d/kernel gradient");
  });
}

app::AdviceContext train_context(const app::TrainOptions& options) {
  return app::AdviceContext{&options.settings.devices, &options, false};
}

void expect_all(const std::string& text, std::initializer_list<const char*> words) {
  for (const char* w : words) EXPECT_NE(text.find(w), std::string::npos) << w << " in: " << text;
}

TEST(CommandLineAdvice, OverTheLimitSaysWhichFlagsToChangeAndOffersTheMlpOnlyToACnnRun) {
  const vgpu::OutOfMemoryError e = over_the_limit();
  app::TrainOptions cnn;
  const std::string said = app::explain(e, train_context(cnn));
  expect_all(said,
             {"/gpu:1: out of memory", "--memory-limit", "--batch-per-replica", "--model mlp"});
  app::TrainOptions mlp;
  mlp.settings.model = core::ModelKind::kMlp;
  const std::string to_mlp = app::explain(e, train_context(mlp));
  expect_all(to_mlp, {"--memory-limit", "--batch-per-replica"});
  EXPECT_EQ(to_mlp.find("--model mlp"), std::string::npos) << to_mlp;
  const std::string bench = app::explain(e, app::AdviceContext{nullptr, nullptr, true});
  expect_all(bench, {"-e/--maxbytes", "--memory-limit"});
}

TEST(CommandLineAdvice, AFullCardSaysHowToSeeItsFreeMemory) {
  app::TrainOptions options;
  const std::string said = app::explain(card_full(), train_context(options));
  expect_all(said, {"GPU 0 has no free memory", "--memory-limit",
                    "mirrorlab devices --backend cuda", "--batch-per-replica"});
}

TEST(CommandLineAdvice, ConfigurationErrorsAreLedByTheirFlag) {
  app::TrainOptions options;
  const std::string fit = vgpu::memory_fit_problem(
      vgpu::PhysicalGpu{0, "NVIDIA H100 80GB HBM3", 81559 * kMiB, 81000 * kMiB}, 81000 * kMiB,
      std::vector<std::size_t>(4, 40000 * kMiB));
  const std::string said =
      app::explain(vgpu::ConfigurationError(fit, vgpu::ConfigurationSubject::kMemoryLimit),
                   train_context(options));
  EXPECT_EQ(said.rfind("--memory-limit: the devices ask for 160000 MiB", 0), 0u) << said;
  expect_all(said, {"Lower --memory-limit"});
  expect_all(app::explain(vgpu::ConfigurationError("there is no GPU:3",
                                                   vgpu::ConfigurationSubject::kPhysicalGpus),
                          train_context(options)),
             {"--devices: there is no GPU:3", "'mirrorlab devices' lists the GPUs"});
  expect_all(app::explain(vgpu::ConfigurationError("SM split: too few SMs",
                                                   vgpu::ConfigurationSubject::kSmSplit),
                          train_context(options)),
             {"--sm-split: SM split: too few SMs", "leave out --sm-split"});
}

TEST(CommandLineAdvice, DataErrorsSayHowToPointAtOtherFiles) {
  app::TrainOptions options;
  const auto missing = caught<core::DataError>([] { core::load_fashion_mnist("/no/such/dir"); });
  EXPECT_TRUE(missing.missing());
  expect_all(app::explain(missing, train_context(options)),
             {"/no/such/dir", "dataset-fashion-mnist", "--data DIR"});
  EXPECT_NE(
      app::explain(core::DataError("x: damaged", false), train_context(options)).find("fix --data"),
      std::string::npos);
}

// An allocation of the program's own refused by the host (the dataset under a tight ulimit -v,
// where no device's limit was reached): what limits the process, and the flags that lower what
// it asks for, not the library's bare "std::bad_alloc".
TEST(CommandLineAdvice, TheHostRefusingMemorySaysWhatLimitsItAndWhatToLower) {
  app::TrainOptions options;
  // Without a limit on the address space (as tests run), the RAM: the same from one call to the
  // next.
  const std::string host = "this process has " + vgpu::query_host_memory().describe();
  expect_all(app::explain(std::bad_alloc(), train_context(options)),
             {"could not give this run the memory", host.c_str(), "--memory-limit", "--gpus"});
}

#ifdef MIRRORLAB_HAVE_GUI
TEST(WindowAdvice, SpeaksOfTheSettingsNeverOfFlags) {
  core::SessionConfig cnn;
  core::SessionConfig mlp;
  mlp.settings.model = core::ModelKind::kMlp;
  const std::string limit = gui::advice(over_the_limit(), cnn);
  expect_all(limit, {"Raise the memory limit of /gpu:1", "batch per replica", "MLP"});
  EXPECT_EQ(gui::advice(over_the_limit(), mlp).find("MLP"), std::string::npos);
  expect_all(gui::advice(card_full(), cnn), {"Close other programs using the card"});
  expect_all(gui::advice(core::DivergedError(core::NonFiniteValue{}), cnn),
             {"lower the learning rate"});
  for (const std::string& text :
       {limit, gui::advice(card_full(), cnn),
        gui::advice(vgpu::ConfigurationError("x", vgpu::ConfigurationSubject::kMemoryLimit), cnn),
        gui::advice(std::make_exception_ptr(std::runtime_error("other")), cnn)}) {
    EXPECT_EQ(text.find("--"), std::string::npos) << "a flag in the window: " << text;
  }
  EXPECT_EQ(gui::advice(std::exception_ptr{}, cnn), "");
}
#endif

}  // namespace
}  // namespace mirrorlab
