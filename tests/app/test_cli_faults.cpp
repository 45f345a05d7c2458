// `mirrorlab train` with faults, run as a user runs it: a device that fails mid-step ends the run
// (status 1) saying where and from which checkpoint it goes on, and going on from there ends as a
// run that never failed; a NaN put into one replica's gradient is named and blamed on the flag,
// not on the learning rate; a straggler's trace shows every replica's wait; a fault that cannot
// happen is refused before training (status 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "tests/support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using mirrorlab::testing::read_file;

const std::string kRun =
    std::string(MIRRORLAB_BINARY_DIR) +
    "/app/mirrorlab train --model mlp --train-examples 2000 --batch-per-replica 32 --gpus 3 "
    "--epochs 2 ";

class FaultsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mirrorlab::testing::has_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  }
  mirrorlab::testing::TempFolder folder_{"cli-faults"};
  const fs::path& dir_ = folder_.path();
};

TEST_F(FaultsCli, AFailedDeviceEndsTheRunAndItGoesOnFromItsLastCheckpointAsIfNothingFailed) {
  const fs::path failed = dir_ / "failed", whole = dir_ / "whole";
  auto r = mirrorlab::testing::run_command(
      kRun + "--max-steps 30 --checkpoint-every 10 --checkpoint-dir " + failed.string() +
      " --fail-device /gpu:1@25 --history " + (dir_ / "h.json").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("Faults: /gpu:1 fails in step 25 (all-reduce)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("mirrorlab: error: /gpu:1 failed in step 25, during the all-reduce "
                          "(its step 2 of 4, reduce-scatter): an error was raised on its stream. "
                          "Every replica stopped the step and none updated its weights: they are "
                          "those after step 24. The run can go on from its last checkpoint, of "
                          "step 20: mirrorlab train --resume " +
                          failed.string()),
            std::string::npos)
      << r.output;
  const nlohmann::json h = nlohmann::json::parse(read_file(dir_ / "h.json"));
  EXPECT_EQ(h["stopped"]["reason"], "failed");
  EXPECT_EQ(h["steps"], 24);
  EXPECT_FALSE(fs::exists(failed / "ckpt-00000024.json")) << "a failed device saves nothing";

  r = mirrorlab::testing::run_command(std::string(MIRRORLAB_BINARY_DIR) +
                                      "/app/mirrorlab train --resume " + failed.string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = mirrorlab::testing::run_command(kRun + "--max-steps 30 --checkpoint-dir " + whole.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_file(failed / "ckpt-00000030.safetensors"),
            read_file(whole / "ckpt-00000030.safetensors"));
}

TEST_F(FaultsCli, ANanPutIntoOneGradientIsNamedAndBlamedOnTheFlag) {
  const auto r = mirrorlab::testing::run_command(kRun + "--nan-at /gpu:2@7");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged in step 7: a gradient of dense on /gpu:2 (replica 2) "
                          "is NaN (dense/kernel, element 117573; found before the all-reduce: "
                          "the weights are those after step 6). It is the NaN that --nan-at "
                          "/gpu:2@7 put into that gradient"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Try a lower --lr"), std::string::npos) << r.output;
}

TEST_F(FaultsCli, AStragglersTraceShowsEveryReplicaWaitingInEveryStep) {
  const fs::path trace = dir_ / "t.json";
  const auto r = mirrorlab::testing::run_command(kRun +
                                                 "--max-steps 5 --slow-device /gpu:1=3 "
                                                 "--trace " +
                                                 trace.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Faults: /gpu:1 computes 3x slower"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wait  all-reduce"), std::string::npos) << "the phase table's column";
  std::map<int, int> waits;  // per device
  const nlohmann::json events = nlohmann::json::parse(read_file(trace));
  for (const auto& e : events["traceEvents"]) {
    if (e.value("name", std::string()) == "wait") ++waits[e["tid"].get<int>()];
  }
  ASSERT_EQ(waits.size(), 3u) << read_file(trace).substr(0, 2000);
  for (const auto& [device, n] : waits) EXPECT_EQ(n, 5) << "device " << device;
}

TEST_F(FaultsCli, AFaultThatCannotHappenIsRefusedBeforeTraining) {
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--slow-device /gpu:3=2", "--slow-device /gpu:3: the run has 3 devices"},
           // 2 epochs of 2000 / 96: 21 steps each
           {"--fail-device /gpu:1@200",
            "--fail-device /gpu:1@200: the run makes 42 steps, so "
            "step 200 never comes; give a step from 1 to 42"},
           {"--nan-at /gpu:0@43", "--nan-at /gpu:0@43: the run makes 42 steps"},
           {"--fail-device /gpu:1@5:middle", "'middle' is not a phase a device can fail in"},
           {"--slow-device /gpu:1=0.5", "'0.5' is out of range: give a number from 1 to 1000"},
           {"--slow-device /gpu:0=2,/gpu:0=3", "--slow-device names /gpu:0 twice"},
           {"--gpus 1 --fail-device /gpu:0@3", "one device has no all-reduce to fail in"}}) {
    std::string run = kRun;
    if (flags.rfind("--gpus", 0) == 0) run.replace(run.find("--gpus 3 "), 9, "");
    const auto r = mirrorlab::testing::run_command(run + flags);
    EXPECT_EQ(r.status, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << flags << "\n" << r.output;
    EXPECT_FALSE(mirrorlab::testing::started_training(r.output)) << flags << ": it trained";
  }
}

}  // namespace
