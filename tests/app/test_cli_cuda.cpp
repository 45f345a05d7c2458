// `mirrorlab train` on CUDA devices, as a user runs it: logical GPUs carved from one card, the
// all-reduce TensorFlow would choose there, NCCL where it can run and its refusal where it
// cannot. Every test needs a visible GPU (and most the dataset) and skips, saying why, without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"

namespace mirrorlab::testing {
namespace {

#define SKIP_WITHOUT_GPU_OR_DATASET()                                                       \
  do {                                                                                      \
    if (!mirrorlab_sees_a_gpu()) GTEST_SKIP() << "no CUDA GPU visible (mirrorlab devices)"; \
    if (!has_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";        \
  } while (0)

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("mirrorlab_" + name + "_" + std::to_string(::getpid()) + ".json");
}

// Two logical GPUs of 512 MiB on one card train the CNN for a few steps: the strategy compares
// the replicas' weight fingerprints after every step and stops the run (status 1) if they
// differ, so status 0 means the replicas stayed in sync; the loss must be finite.
TEST(CliCuda, TrainOnTwoLogicalGpusRunsInSyncWithAFiniteLoss) {
  SKIP_WITHOUT_GPU_OR_DATASET();
  const std::filesystem::path history = temp_file("cuda_history");
  const CommandOutput r = run_mirrorlab(
      "train --backend cuda --gpus 2 --memory-limit 512 --epochs 1 --max-steps 8 "
      "--batch-per-replica 32 --train-examples 2048 --history " +
      history.string());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* words :
       {"1 Physical GPU, 2 Logical GPUs",
        "auto: ring, as TensorFlow 2.21 chooses on logical GPUs sharing a card",
        "implementation = CommunicationImplementation.RING",
        "Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:GPU:0', "
        "'/job:localhost/replica:0/task:0/device:GPU:1')",
        "Stopped after --max-steps 8"}) {
    EXPECT_NE(r.output.find(words), std::string::npos) << words << " missing from:\n" << r.output;
  }
  std::ifstream in(history);
  ASSERT_TRUE(in) << "no history file at " << history;
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["steps"], 8);
  const double loss = j["final_train_loss"].get<double>();
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;
  EXPECT_TRUE(std::isfinite(j["test"]["loss"].get<double>()));
  for (const char* device : {"/gpu:0", "/gpu:1"}) {
    ASSERT_TRUE(j["phase_seconds"].contains(device)) << device;
    for (const char* phase : {"split", "forward", "backward", "all-reduce", "update"}) {
      EXPECT_GT(j["phase_seconds"][device][phase].get<double>(), 0.0) << device << " " << phase;
    }
    const auto peak = j["peak_memory_bytes"][device].get<std::size_t>();
    EXPECT_GT(peak, 0u) << device;
    EXPECT_LE(peak, std::size_t{512} << 20) << device;
  }
  std::filesystem::remove(history);
}

// The forward and backward captured as CUDA graphs (the default) and launched kernel by kernel
// (--no-cuda-graphs) train to the same losses bit for bit on the card, with and without each
// logical GPU's own SMs (green contexts); each run says how its steps ran.
TEST(CliCuda, CapturedStepsTrainAsUncapturedOnesBitForBit) {
  SKIP_WITHOUT_GPU_OR_DATASET();
  for (const char* split : {"", " --sm-split"}) {
    std::string losses[2];
    for (int graphs = 0; graphs < 2; ++graphs) {
      const std::filesystem::path history = temp_file("graphs_history");
      const CommandOutput r = run_mirrorlab(
          std::string("train --backend cuda --gpus 2 --memory-limit 512 --epochs 1 --max-steps 20 "
                      "--batch-per-replica 32 --train-examples 2048 --history ") +
          history.string() + split + (graphs == 1 ? "" : " --no-cuda-graphs"));
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_NE(r.output.find(graphs == 1 ? "CUDA graphs: 2 of 2 replicas" : "CUDA graphs: off"),
                std::string::npos)
          << split << "\n"
          << r.output;
      std::ifstream in(history);
      ASSERT_TRUE(in) << "no history file at " << history;
      const nlohmann::json j = nlohmann::json::parse(in);
      losses[graphs] = j["final_train_loss"].dump() + " " + j["test"]["loss"].dump();
      std::filesystem::remove(history);
    }
    EXPECT_EQ(losses[1], losses[0]) << split;
  }
}

TEST(CliCuda, AutoTrainsOnTheGpuWhenOneIsVisibleAndSaysSo) {
  SKIP_WITHOUT_GPU_OR_DATASET();
  const CommandOutput r = run_mirrorlab(
      "train --backend auto --model mlp --gpus 2 --memory-limit 256 --epochs 1 --max-steps 2 "
      "--batch-per-replica 16 --train-examples 256");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--backend auto: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("using CUDA devices"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 Physical GPU, 2 Logical GPUs"), std::string::npos) << r.output;
}

// Explicit NCCL on two logical GPUs of one card: NCCL before 2.30 refuses two ranks on one GPU,
// so the run is refused with that reason (status 2), before the dataset is read.
TEST(CliCuda, NcclOnLogicalGpusOfOneCardIsRefusedWithItsReason) {
  if (!mirrorlab_sees_a_gpu()) GTEST_SKIP() << "no CUDA GPU visible (mirrorlab devices)";
  const vgpu::NcclRuntime nccl = vgpu::nccl_runtime();
  if (nccl.built && nccl.version_code >= vgpu::kNcclMultiRankGpuVersion) {
    GTEST_SKIP() << "NCCL " << vgpu::nccl_version_text(nccl.version_code)
                 << " runs two logical GPUs in its experimental multi-rank mode";
  }
  const CommandOutput r = run_mirrorlab(
      "train --backend cuda --gpus 2 --memory-limit 256 --allreduce nccl --data "
      "/nonexistent/fashion");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(
      r.output.find(nccl.built ? "refuses two ranks on the same GPU" : "this build has no NCCL"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
}

// One replica on its own GPU: NCCL can run (one rank), and it does.
TEST(CliCuda, NcclWithOneGpuPerReplicaTrains) {
  SKIP_WITHOUT_GPU_OR_DATASET();
  if (!vgpu::nccl_runtime().built) GTEST_SKIP() << "this build has no NCCL";
  const CommandOutput r = run_mirrorlab(
      "train --backend cuda --gpus 1 --memory-limit 512 --allreduce nccl --model mlp --epochs 1 "
      "--max-steps 3 --batch-per-replica 32 --train-examples 512");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("All-reduce: nccl (NCCL "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Stopped after --max-steps 3"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace mirrorlab::testing
