// `mirrorlab train` with checkpoints, run as a user runs it: a run stopped at step 30 and resumed
// to 60 ends with the very bytes of a run of 60; Ctrl-C saves a checkpoint the run goes on from,
// bit for bit, and SIGTERM in the validation pass stops within a few of its batches, saving one
// too; a resumed run on other devices says what changed; and every --resume that cannot work is
// refused with a sentence (exit 2) before anything trains.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "tests/support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using mirrorlab::testing::read_file;
using mirrorlab::testing::run_command;

const std::string kMirrorlab = std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab";

// 500 examples in global batches of 16 x 3 = 48: 11 steps an epoch, the last of 20 examples
// (7 + 7 + 6).
const std::string kRun =
    " --model mlp --train-examples 500 --batch-per-replica 16 --gpus 3 --epochs 8 ";

class CheckpointCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mirrorlab::testing::has_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  }
  mirrorlab::testing::CommandOutput train(const std::string& args) {
    return run_command(kMirrorlab + " train " + args);
  }
  // The history without what no two runs share (seconds, images per second).
  static nlohmann::json comparable(const fs::path& history) {
    nlohmann::json h = nlohmann::json::parse(read_file(history));
    for (auto& e : h["epochs"]) e.erase("seconds");
    for (const char* key :
         {"train_seconds", "images_per_second", "phase_seconds", "config", "peak_memory_bytes"}) {
      h.erase(key);
    }
    return h;
  }
  mirrorlab::testing::TempFolder folder_{"cli-checkpoint"};
  const fs::path& dir_ = folder_.path();
};

TEST_F(CheckpointCli, ThirtyStepsThenResumedToSixtyEndWithTheBytesOfOneRunOfSixty) {
  const fs::path whole = dir_ / "whole", part = dir_ / "part";
  auto r = train(kRun + "--max-steps 60 --checkpoint-every 1000 --checkpoint-dir " +
                 whole.string() + " --history " + (dir_ / "h0.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = train(kRun + "--max-steps 30 --checkpoint-every 1000 --checkpoint-dir " + part.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(
      r.output.find("Checkpoint saved: " + (part / "ckpt-00000030.json").string() + " (step 30)"),
      std::string::npos)
      << r.output;
  r = train("--resume " + part.string() + " --max-steps 60 --history " +
            (dir_ / "h1.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find(
                "Resuming from " + (part / "ckpt-00000030.json").string() +
                ": step 30, inside epoch 3 (8 steps, 384 of 500 examples done)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Changed: 60 steps in all, was 30 steps\n"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("where the checkpoint's run had"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(whole / "ckpt-00000060.safetensors"),
            read_file(part / "ckpt-00000060.safetensors"));
  EXPECT_EQ(comparable(dir_ / "h0.json"), comparable(dir_ / "h1.json"));
  // The state files differ only in the seconds the runs took.
  nlohmann::json a = nlohmann::json::parse(read_file(whole / "ckpt-00000060.json"));
  nlohmann::json b = nlohmann::json::parse(read_file(part / "ckpt-00000060.json"));
  for (nlohmann::json* s : {&a, &b}) {
    s->erase("checksum");
    (*s)["history"].erase("train_seconds");
    (*s)["position"].erase("epoch_seconds");
    for (auto& e : (*s)["history"]["epochs"]) e.erase("seconds");
  }
  EXPECT_EQ(a, b);
}

TEST_F(CheckpointCli, CtrlCSavesACheckpointAndTheRunGoesOnFromItBitForBit) {
  const fs::path log = dir_ / "log", stopped = dir_ / "stopped";
  const pid_t pid = mirrorlab::testing::start_command(
      kMirrorlab,
      "train --model mlp --train-examples 20000 --epochs 3 --checkpoint-every 1000 "
      "--checkpoint-dir " +
          stopped.string(),
      log);
  ASSERT_TRUE(mirrorlab::testing::wait_for_text(log, "Epoch 1/3", 60)) << read_file(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  ASSERT_EQ(mirrorlab::testing::wait_exit(pid, 60), 130) << read_file(log);
  const std::string out = read_file(log);
  const std::size_t at = out.find("Checkpoint saved: ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::size_t step_at = out.find("(step ", at) + 6;
  const int steps = std::stoi(out.substr(step_at));
  EXPECT_NE(out.find("Interrupted: stopped by SIGINT (Ctrl-C) after step " + std::to_string(steps)),
            std::string::npos)
      << out;
  ASSERT_LT(steps, 3 * 157);
  const std::string name =
      "ckpt-" + std::string(8 - std::to_string(steps).size(), '0') + std::to_string(steps);

  // Five steps more from there, and the same number in one run from the start.
  const std::string more = " --max-steps " + std::to_string(steps + 5);
  auto r = train("--resume " + stopped.string() + more);
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path whole = dir_ / "whole";
  r = train("--model mlp --train-examples 20000 --epochs 3 --checkpoint-dir " + whole.string() +
            more);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string last = "ckpt-" + std::string(8 - std::to_string(steps + 5).size(), '0') +
                           std::to_string(steps + 5) + ".safetensors";
  EXPECT_EQ(read_file(whole / last), read_file(stopped / last));
  EXPECT_TRUE(fs::exists(stopped / (name + ".json"))) << "the checkpoint of the interrupt";
}

// A stop during the end-of-epoch validation pass takes effect between its batches, not after the
// whole pass (which went on for a minute with a straggler, and a run killed meanwhile left no
// checkpoint): the run stops as a stop between steps does, saving the checkpoint of its steps.
TEST_F(CheckpointCli, SigtermDuringTheValidationPassStopsWithinAFewBatchesLeavingACheckpoint) {
  // One training step, then the pass over the 10000 test images in 313 global batches of 32, made
  // slow by a straggler: some 20 s in all.
  const fs::path log = dir_ / "log", ck = dir_ / "ck", trace = dir_ / "trace.json";
  const pid_t pid = mirrorlab::testing::start_command(
      kMirrorlab,
      "train --model mlp --gpus 2 --batch-per-replica 16 --train-examples 32 --epochs 1 "
      "--slow-device /gpu:1=300 --checkpoint-dir " +
          ck.string() + " --trace " + trace.string(),
      log);
  // Printed just before the first step (a fit of one epoch has no "Epoch 1/1" line).
  ASSERT_TRUE(mirrorlab::testing::wait_for_text(log, "Global batch 32 =", 60)) << read_file(log);
  // The step takes a third of a second, the pass some 20 s: 6 s lands in the pass even when a
  // busy machine makes the step ten times slower (3 s once did not, beside two fuzzers).
  std::this_thread::sleep_for(std::chrono::seconds(6));
  kill(pid, SIGTERM);
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(mirrorlab::testing::wait_exit(pid, 60), 143) << read_file(log);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_LT(seconds, 5.0) << "the validation pass went on after SIGTERM";
  const std::string out = read_file(log);
  EXPECT_NE(out.find("Checkpoint saved: " + (ck / "ckpt-00000001.json").string() + " (step 1)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Interrupted: stopped by SIGTERM after step 1 "), std::string::npos) << out;
  EXPECT_EQ(out.find("val_loss"), std::string::npos) << out;
  // The pass had begun, and stopped between its batches: a whole one is 313 batches on each of
  // the 2 replicas.
  const std::string events = read_file(trace);
  int evaluated = 0;
  for (std::size_t at = events.find("\"name\":\"evaluate\""); at != std::string::npos;
       at = events.find("\"name\":\"evaluate\"", at + 1)) {
    ++evaluated;
  }
  EXPECT_GT(evaluated, 0) << "stopped before the pass";
  EXPECT_LT(evaluated, 2 * 313);
  // The run that goes on from the checkpoint makes the epoch's validation pass, and ends.
  const auto r = train("--resume " + ck.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("val_loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(10000 test images)"), std::string::npos) << r.output;
}

TEST_F(CheckpointCli, ResumingOnOtherDevicesSaysWhatChangedAndKeepsTheNewestN) {
  const fs::path dir = dir_ / "ckpt";
  auto r =
      train(kRun + "--max-steps 13 --checkpoint-every 5 --keep 2 --checkpoint-dir " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "ckpt-00000010.json"));
  EXPECT_TRUE(fs::exists(dir / "ckpt-00000013.json"));
  EXPECT_FALSE(fs::exists(dir / "ckpt-00000005.json")) << "--keep 2";
  r = train("--resume " + dir.string() + " --gpus 2 --max-steps 20");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find(
                "Changed: 2 replicas, where the checkpoint's run had 3: every replica "
                "takes the same one copy of the weights"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Changed: the global batch is 32, was 48"), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dir / "ckpt-00000020.json")) << "a resumed run saves where it resumed";
}

TEST_F(CheckpointCli, AResumeThatCannotWorkIsRefusedBeforeTraining) {
  const fs::path dir = dir_ / "ckpt";
  auto r = train(kRun + "--max-steps 12 --checkpoint-dir " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  fs::create_directories(dir_ / "empty");
  { std::ofstream(dir_ / "damaged") << "x"; }
  fs::create_directories(dir_ / "damaged-dir");
  fs::copy(dir, dir_ / "damaged-dir", fs::copy_options::recursive);
  { std::ofstream(dir_ / "damaged-dir" / "ckpt-00000012.safetensors", std::ios::app) << "x"; }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--resume " + (dir_ / "none").string(), "none: does not exist"},
      {"--resume " + (dir_ / "empty").string(), "holds no checkpoint (no ckpt-*.json file)"},
      {"--resume " + (dir_ / "damaged").string(), "is not a folder of checkpoints"},
      {"--resume " + (dir_ / "damaged-dir").string(), "ckpt-00000012.safetensors: holds "},
      {"--resume " + dir.string() + " --lr 0.01", "--lr 0.01: the checkpoint " +
                                                      (dir / "ckpt-00000012.json").string() +
                                                      " was trained with 0.001"},
      {"--resume " + dir.string() + " --model cnn", "--model cnn: the checkpoint"},
      {"--resume " + dir.string() + " --max-steps 12",
       "--max-steps 12: the checkpoint " + (dir / "ckpt-00000012.json").string() +
           " is at step 12: nothing is left to run"},
      {"--resume " + dir.string() + " --epochs 1 --max-steps 100",
       "--epochs 1: the checkpoint " + (dir / "ckpt-00000012.json").string() +
           " is at step 12, inside epoch 2"},
      {"--resume " + dir.string() + " --max-steps 20 --train-examples 400",
       "--train-examples 400: the checkpoint"},
  };
  for (const auto& [args, expected] : cases) {
    r = train(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << "\n" << r.output;
    EXPECT_FALSE(mirrorlab::testing::started_training(r.output)) << args << ": it trained\n"
                                                                 << r.output;
  }
}

// A folder of checkpoints is its run's: a second run there (another seed, another model, with
// --keep 1) is refused before it trains, naming what is there, and the first run's files stay.
TEST_F(CheckpointCli, AFolderHoldingAnotherRunsCheckpointsIsRefusedUnlessResumed) {
  const fs::path runs = dir_ / "runs";
  auto r = train(kRun + "--seed 1 --max-steps 4 --checkpoint-dir " + runs.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string first = read_file(runs / "ckpt-00000004.json");
  for (const std::string& again :
       {kRun + "--seed 2 --lr 0.01 --max-steps 4", kRun + "--max-steps 2 --keep 1",
        std::string("--model cnn --train-examples 500 --gpus 2 --max-steps 1")}) {
    r = train(again + " --checkpoint-dir " + runs.string());
    EXPECT_EQ(r.status, 2) << again << ": " << r.output;
    EXPECT_NE(r.output.find("it holds 1 checkpoint of another run (the newest "
                            "ckpt-00000004.json, of step 4)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("--resume " + runs.string()), std::string::npos) << r.output;
    EXPECT_FALSE(mirrorlab::testing::started_training(r.output)) << "trained: " << r.output;
  }
  EXPECT_EQ(read_file(runs / "ckpt-00000004.json"), first);
  // Into another folder that holds checkpoints, a resumed run is refused too; into its own, not.
  r = train(kRun + "--max-steps 2 --checkpoint-dir " + (dir_ / "other").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = train("--resume " + (dir_ / "other").string() + " --max-steps 6 --checkpoint-dir " +
            runs.string());
  EXPECT_EQ(r.status, 2) << r.output;
  r = train("--resume " + runs.string() + " --max-steps 6");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(runs / "ckpt-00000006.json"));
}

// Flags that would do nothing without a folder are refused, not ignored.
TEST_F(CheckpointCli, CheckpointFlagsWithoutAFolderAreRefused) {
  for (const std::string flag : {"--checkpoint-every 5", "--keep 2"}) {
    const auto r = train(kRun + "--max-steps 2 " + flag);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(
        r.output.find(flag.substr(0, flag.find(' ')) + " needs --checkpoint-dir (or --resume)"),
        std::string::npos)
        << r.output;
  }
}

// --history and --trace may not name a checkpoint's file in the folder the run saves into or
// resumes from.
TEST_F(CheckpointCli, AnOutputNamedLikeACheckpointOfTheRunsFolderIsRefused) {
  const fs::path ck = dir_ / "ck";
  auto r = train(kRun + "--max-steps 3 --checkpoint-dir " + ck.string() + " --history " +
                 (ck / "ckpt-00000003.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("that is a checkpoint's file in --checkpoint-dir"), std::string::npos)
      << r.output;
  r = train(kRun + "--max-steps 3 --checkpoint-dir " + ck.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string saved = read_file(ck / "ckpt-00000003.json");
  r = train("--resume " + ck.string() + " --max-steps 5 --trace " +
            (ck / "ckpt-00000003.safetensors").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("that is a checkpoint's file in --checkpoint-dir"), std::string::npos)
      << r.output;
  r = train("--resume " + ck.string() + " --max-steps 5 --history " +
            (ck / "." / "ckpt-00000003.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(read_file(ck / "ckpt-00000003.json"), saved);
  // Another name in the folder is the user's to choose.
  r = train("--resume " + ck.string() + " --max-steps 5 --history " +
            (ck / "history.json").string());
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
