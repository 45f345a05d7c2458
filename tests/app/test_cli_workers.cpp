// `mpirun -np 2 mirrorlab train ...` as a user runs it (issue 17): two workers train as one,
// each prints its TF_CONFIG, only worker 0 prints Keras' progress, the history and the trace of
// both are one file each; flags that differ between workers are refused; a worker killed in the
// middle of a run makes the other exit non-zero within 10 s, naming it; SIGTERM to one worker in
// the validation pass stops both together; and without mpirun,
// --workers says how to launch. Registered in builds with MPI and mpirun (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "tests/support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using mirrorlab::testing::read_file;

const std::string kMirrorlab = std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab";
// More ranks than cores need --oversubscribe (tests/support/command_output.h: the environment).
const std::string kMpirun = "env " + mirrorlab::testing::mpirun_test_environment() +
                            std::string(MIRRORLAB_MPIEXEC) + " --oversubscribe ";

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Workers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mirrorlab::testing::has_fashion_mnist())
      GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
  mirrorlab::testing::TempFolder folder_{"workers"};
  const fs::path& dir_ = folder_.path();
};

TEST_F(Workers, TwoWorkersTrainAsOneAndWorker0WritesEveryWorkersHistoryAndTrace) {
  const fs::path history = dir_ / "h.json", trace = dir_ / "t.json";
  const auto run = mirrorlab::testing::run_command(
      kMpirun + "-np 2 " + kMirrorlab +
      " train --model mlp --gpus 2 --batch-per-replica 16 --epochs 1 --max-steps 8 "
      "--train-examples 512 --optimizer sgd --lr 0.05 --history " +
      history.string() + " --trace " + trace.string());
  ASSERT_EQ(run.status, 0) << run.output;
  // Each worker's TF_CONFIG: the same cluster, its own task.
  for (int w = 0; w < 2; ++w) {
    EXPECT_NE(run.output.find("Worker " + std::to_string(w) + " of 2"), std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("\"task\":{\"type\":\"worker\",\"index\":" + std::to_string(w) + "}"),
              std::string::npos)
        << run.output;
  }
  EXPECT_EQ(count_of(run.output, "\"cluster\":{\"worker\":["), 2) << run.output;
  // Worker 0 alone tells the run: one progress, one global batch of 16 x 2 x 2.
  EXPECT_EQ(count_of(run.output, " - val_loss: "), 1) << run.output;  // the epoch's last line
  EXPECT_EQ(count_of(run.output, "Global batch 64 = 16 per replica x 4 replicas"), 1) << run.output;
  EXPECT_NE(run.output.find("Across 2 workers: MPI_Allreduce"), std::string::npos) << run.output;

  const nlohmann::json h = nlohmann::json::parse(read_file(history));
  EXPECT_EQ(h["config"]["workers"], 2);
  EXPECT_EQ(h["config"]["global_batch"], 64);
  EXPECT_EQ(h["steps"], 8);
  ASSERT_EQ(h["workers"].size(), 2u);
  for (int w = 0; w < 2; ++w) {
    const nlohmann::json& worker = h["workers"][static_cast<std::size_t>(w)];
    EXPECT_EQ(worker["worker"], w);
    EXPECT_EQ(worker["tf_config"]["task"]["index"], w);
    ASSERT_EQ(worker["devices"].size(), 2u);
    EXPECT_GT(worker["devices"][1]["phase_seconds"]["forward"].get<double>(), 0.0);
  }
  // The trace: a process per worker (named), a lane per device, both workers' steps.
  const nlohmann::json t = nlohmann::json::parse(read_file(trace));
  int processes = 0, lanes = 0, forward_of_worker_1 = 0;
  for (const nlohmann::json& e : t["traceEvents"]) {
    if (e["name"] == "process_name") ++processes;
    if (e["name"] == "thread_name") ++lanes;
    if (e["name"] == "forward" && e["pid"] == 2) ++forward_of_worker_1;
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(lanes, 4);
  EXPECT_EQ(forward_of_worker_1, 2 * 8) << "worker 1's 2 devices, 8 steps";
}

TEST_F(Workers, TwoRunsOfTwoWorkersEndWithTheSameWeights) {
  std::vector<nlohmann::json> histories;
  for (const char* name : {"a.json", "b.json"}) {
    const fs::path history = dir_ / name;
    const auto run = mirrorlab::testing::run_command(
        kMpirun + "-np 2 " + kMirrorlab +
        " train --model cnn --gpus 2 --batch-per-replica 8 --epochs 1 --max-steps 6 "
        "--train-examples 256 --history " +
        history.string());
    ASSERT_EQ(run.status, 0) << run.output;
    histories.push_back(nlohmann::json::parse(read_file(history)));
  }
  // The L2 norm of every final weight and the last step's loss, to the last bit.
  EXPECT_EQ(histories[0]["weights_l2"].get<double>(), histories[1]["weights_l2"].get<double>());
  EXPECT_EQ(histories[0]["final_train_loss"].get<double>(),
            histories[1]["final_train_loss"].get<double>());
  EXPECT_EQ(histories[0]["test"]["loss"].get<double>(), histories[1]["test"]["loss"].get<double>());
}

// Train, and the window (before it opens), compare every worker's flags.
TEST_F(Workers, FlagsThatDifferBetweenWorkersAreRefusedNamingTheFlag) {
  std::vector<std::string> commands{"train"};
#ifdef MIRRORLAB_HAVE_GUI
  commands.emplace_back("gui");  // a build without the window says so before comparing flags
#endif
  for (const std::string& command : commands) {
    const std::string common =
        " " + command + " --model mlp --gpus 1 --max-steps 2 --train-examples 256";
    const auto run =
        mirrorlab::testing::run_command(kMpirun + "-np 1 " + kMirrorlab + common +
                                        " --lr 0.01 : -np 1 " + kMirrorlab + common + " --lr 0.02");
    EXPECT_EQ(run.status, 2) << run.output;
    EXPECT_NE(run.output.find("mirrorlab " + command +
                              ": the workers were started with different flags: worker 1 has "
                              "--lr 0.02 where worker 0 has --lr 0.01"),
              std::string::npos)
        << run.output;
    EXPECT_EQ(count_of(run.output, "different flags"), 1) << "said once, by worker 0";
    EXPECT_FALSE(mirrorlab::testing::started_training(run.output)) << "trained anyway:\n"
                                                                   << run.output;
  }
  // A flag one worker did not give is said so, with the default it trains with: not "worker 0 has
  // --gpus 0", a value no one gave.
  const std::string no_gpus = " train --model mlp --max-steps 2 --train-examples 256";
  const auto gpus = mirrorlab::testing::run_command(
      kMpirun + "-np 1 " + kMirrorlab + no_gpus + " : -np 1 " + kMirrorlab + no_gpus + " --gpus 1");
  EXPECT_EQ(gpus.status, 2) << gpus.output;
  EXPECT_NE(
      gpus.output.find("worker 1 has --gpus 1 where worker 0 gave no --gpus (the default, 2)"),
      std::string::npos)
      << gpus.output;
  // The files are worker 0's, with every worker's part: asked of every worker or of none. Asked
  // of worker 0 alone, the run used to train, then wait 60 s and blame a slow worker.
  const std::string common = " train --model mlp --gpus 1 --max-steps 2 --train-examples 256";
  const auto run = mirrorlab::testing::run_command(kMpirun + "-np 1 " + kMirrorlab + common +
                                                   " --history " + (dir_ / "h.json").string() +
                                                   " : -np 1 " + kMirrorlab + common);
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_NE(run.output.find("worker 1 has --history (not given) where worker 0 has --history "
                            "(a file)"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(mirrorlab::testing::started_training(run.output)) << "trained anyway:\n"
                                                                 << run.output;
}

TEST_F(Workers, GuiLessonsAndFaultsAreRefusedUnderMpirun) {
#ifndef MIRRORLAB_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (Dear ImGui, GLFW or OpenGL missing when configured)";
#endif
  std::vector<std::pair<std::string, std::string>> cases{
      {"--gpus 2 --slow-device /gpu:1=3", "the fault flags are not built for several"}};
#ifdef MIRRORLAB_HAVE_LESSONS
  cases.emplace_back("--lesson mirrored-strategy", "--lesson plays its runs in one process");
#endif
  for (const auto& [flags, words] : cases) {
    const auto run = mirrorlab::testing::run_command(kMpirun + "-np 2 " + kMirrorlab +
                                                     " gui --model mlp " + flags);
    EXPECT_EQ(run.status, 2) << run.output;
    EXPECT_NE(run.output.find(words), std::string::npos) << flags << "\n" << run.output;
  }
}

TEST_F(Workers, GuiWithNoDisplayIsSaidOnceBeforeTheDataAndEveryWorkerLeaves) {
#ifndef MIRRORLAB_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (Dear ImGui, GLFW or OpenGL missing when configured)";
#endif
  const auto run = mirrorlab::testing::run_command("env -u DISPLAY -u WAYLAND_DISPLAY " + kMpirun +
                                                   "-np 2 " + kMirrorlab + " gui --model mlp");
  EXPECT_EQ(run.status, 2) << run.output;
  const std::string said = "cannot open a window";
  const auto first = run.output.find(said);
  ASSERT_NE(first, std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(said, first + 1), std::string::npos) << "said twice:\n" << run.output;
  EXPECT_EQ(run.output.find("Loading Fashion-MNIST"), std::string::npos) << run.output;
}

TEST_F(Workers, CheckpointsAndFaultsAreRefusedWithSeveralWorkers) {
  const auto run = mirrorlab::testing::run_command(
      kMpirun + "-np 2 " + kMirrorlab + " train --model mlp --max-steps 2 --checkpoint-dir " +
      (dir_ / "ckpt").string());
  EXPECT_NE(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("--checkpoint-dir is not built for several workers yet"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir_ / "ckpt")) << "a worker made the folder before the refusal";
}

TEST_F(Workers, AWorkerKilledMidRunMakesTheOtherExitWithin10SecondsNamingIt) {
  const fs::path log = dir_ / "log";
  // Long enough to be killed in the middle: 60,000 examples in steps of 4 x 8.
  const pid_t mpirun = mirrorlab::testing::start_command(
      kMpirun + "-np 2 " + kMirrorlab,
      "train --model mlp --gpus 2 --batch-per-replica 8 --epochs 20 --optimizer sgd --history " +
          (dir_ / "h.json").string() + " --trace " + (dir_ / "t.json").string(),
      log);
  ASSERT_TRUE(mirrorlab::testing::wait_for_text(log, "Global batch", 120)) << read_file(log);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // in the middle of training
  mirrorlab::testing::expect_worker_1_killed_said(mpirun, log);
  // Worker 0 left at once, and the files it held open were removed: nothing half-made is left.
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "log") << "left behind: " << entry.path();
  }
}

// A stop asked of one worker during the validation pass, which is now asked between its batches
// too, is agreed by every worker between the same two batches (an exchange, as between steps):
// both stop together, none waits for ever in the pass's next exchange.
TEST_F(Workers, SigtermToOneWorkerDuringTheValidationPassStopsEveryWorkerTogether) {
  const fs::path log = dir_ / "log", history = dir_ / "h.json";
  // 100 epochs of one step, each closed by a pass over the 10000 test images: nearly all of the
  // run is validation.
  const pid_t mpirun = mirrorlab::testing::start_command(
      kMpirun + "-np 2 " + kMirrorlab,
      "train --model cnn --gpus 1 --batch-per-replica 16 --train-examples 32 --epochs 100 "
      "--history " +
          history.string(),
      log);
  ASSERT_TRUE(mirrorlab::testing::wait_for_text(log, "Epoch 3/100", 120)) << read_file(log);
  const std::string started = read_file(log);
  const std::string pid = mirrorlab::testing::worker_1_pid(started);
  ASSERT_FALSE(pid.empty()) << started;
  ASSERT_EQ(kill(std::stoi(pid), SIGTERM), 0);
  const auto signalled = std::chrono::steady_clock::now();
  const int status = mirrorlab::testing::wait_exit(mpirun, 30);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_NE(status, -1) << "a worker waited for ever:\n" << read_file(log);
  EXPECT_LT(seconds, 10.0) << read_file(log);
  const nlohmann::json h = nlohmann::json::parse(read_file(history));
  EXPECT_EQ(h["stopped"]["reason"], "interrupted") << h["stopped"];
  EXPECT_NE(h["stopped"]["message"].get<std::string>().find("stopped by another worker's signal"),
            std::string::npos)
      << h["stopped"];
  EXPECT_LT(h["steps"].get<int>(), 100);
}

TEST(WorkersWithoutMpirun, AskingForWorkersSaysHowToLaunchThem) {
  const auto run = mirrorlab::testing::run_command(kMirrorlab + " train --workers 2 --max-steps 1");
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_NE(run.output.find("mpirun -np 2 mirrorlab train"), std::string::npos) << run.output;
}

TEST(WorkersWithoutMpirun, WorkersThatDisagreeWithMpirunAreRefused) {
  const auto run = mirrorlab::testing::run_command(kMpirun + "-np 2 " + kMirrorlab +
                                                   " train --workers 3 --max-steps 1");
  EXPECT_NE(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("--workers 3 but mpirun (Open MPI) started 2 processes"),
            std::string::npos)
      << run.output;
}

TEST(WorkersWithoutMpirun, OtherCommandsUnderMpirunSayThatOnlyTrainRunsAsWorkers) {
  const auto run = mirrorlab::testing::run_command(kMpirun + "-np 2 " + kMirrorlab + " devices");
  EXPECT_NE(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("mirrorlab devices: runs as one process"), std::string::npos)
      << run.output;
  EXPECT_EQ(count_of(run.output, "runs as one process"), 1) << "said once, by rank 0";
}

}  // namespace
