// How a run of `mirrorlab train` ends, and what it leaves: training that diverges, Ctrl-C,
// SIGTERM, SIGHUP and a reader of its output that goes away (and Ctrl-C in a lesson), output files
// that cannot be written (a link, a device, a full disk, one file for two flags), and a standard
// output that refuses writes. Run as a user runs it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "tests/support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using Result = mirrorlab::testing::CommandOutput;

const std::string kMirrorlab = std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab";

bool has_dataset() { return mirrorlab::testing::has_fashion_mnist(); }

std::string read(const fs::path& path) { return mirrorlab::testing::read_file(path); }

// A fresh folder per test, removed after it.
class RunEnd : public ::testing::Test {
 protected:
  // Names in the folder that start with '.': temporary files left behind.
  std::vector<std::string> hidden_files() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (!name.empty() && name[0] == '.') found.push_back(name);
    }
    return found;
  }

  // `mirrorlab args` in the background, stdout and stderr into `log`.
  pid_t start(const std::string& args, const fs::path& log) {
    return mirrorlab::testing::start_command(kMirrorlab, args, log);
  }
  static bool wait_for_text(const fs::path& log, const std::string& text, double seconds) {
    return mirrorlab::testing::wait_for_text(log, text, seconds);
  }
  static int wait_exit(pid_t pid, double seconds) {
    return mirrorlab::testing::wait_exit(pid, seconds);
  }

  mirrorlab::testing::TempFolder folder_{"run-end"};
  const fs::path& dir_ = folder_.path();
};

// ---------------------------------------------------------------------------------------------
// Divergence
// ---------------------------------------------------------------------------------------------

TEST_F(RunEnd, TrainingThatDivergesStopsNamingStepReplicaAndWhatToTryAndSavesTheRunSoFar) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path history = dir_ / "h.json", trace = dir_ / "t.json";
  const Result r = mirrorlab::testing::run_command(
      kMirrorlab +
      " train --model mlp --optimizer sgd --momentum 0.9 --lr 10 --batch-per-replica 1 "
      "--train-examples 2000 --history " +
      history.string() + " --trace " + trace.string());
  EXPECT_EQ(r.status, 1) << r.output;
  for (const char* words :
       {"training diverged in step", "(replica ", "is NaN", "the weights are those after step",
        "Try a lower --lr (now 10)", "sgd optimizer (momentum 0.9), lr 10"}) {
    EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
  }
  const nlohmann::json h = nlohmann::json::parse(read(history));  // valid JSON, or this throws
  EXPECT_EQ(h["stopped"]["reason"], "diverged");
  EXPECT_NE(h["stopped"]["message"].get<std::string>().find("diverged in step"), std::string::npos);
  const int steps = h["steps"];
  EXPECT_GT(steps, 0);
  EXPECT_EQ(h["stopped"]["after_step"], steps);
  for (const auto& epoch : h["epochs"]) {
    EXPECT_TRUE(epoch["loss"].is_number()) << "a loss written as null: " << epoch.dump();
  }
  EXPECT_FALSE(h["warnings"].empty()) << "the loss grew past 100x first: a warning was due";
  EXPECT_TRUE(nlohmann::json::accept(read(trace)));
  EXPECT_TRUE(hidden_files().empty());
}

TEST_F(RunEnd, ALossGrowingFarPastItsStartIsAWarningThoughItStaysFinite) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path history = dir_ / "h.json";
  const Result r =
      mirrorlab::testing::run_command(kMirrorlab +
                                      " train --model mlp --optimizer sgd --lr 10 --max-steps 20 "
                                      "--train-examples 4096 --history " +
                                      history.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("WARNING: the mean loss of step"), std::string::npos) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find("training is diverging"),
            std::string::npos)
      << r.output;
  const nlohmann::json h = nlohmann::json::parse(read(history));
  EXPECT_EQ(h["warnings"].size(), 1u);
  EXPECT_EQ(h["stopped"]["reason"], "max_steps");
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C and SIGTERM
// ---------------------------------------------------------------------------------------------

void expect_saved_after_signal(const fs::path& log, const fs::path& history, const fs::path& trace,
                               const char* signal_name) {
  const std::string out = read(log);
  EXPECT_NE(out.find(std::string("Interrupted: stopped by ") + signal_name + " after step"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("History written to"), std::string::npos) << out;
  const nlohmann::json h = nlohmann::json::parse(read(history));
  EXPECT_EQ(h["stopped"]["reason"], "interrupted");
  const int steps = h["steps"];
  EXPECT_GT(steps, 0);
  EXPECT_LT(steps, 3 * 79);  // 3 epochs of 10000 / 128: it stopped early
  EXPECT_TRUE(nlohmann::json::accept(read(trace)));
}

TEST_F(RunEnd, CtrlCFinishesTheStepSavesHistoryAndTraceAndExits130) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path log = dir_ / "log", history = dir_ / "h.json", trace = dir_ / "t.json";
  const pid_t pid = start("train --model cnn --epochs 3 --train-examples 10000 --history " +
                              history.string() + " --trace " + trace.string(),
                          log);
  ASSERT_TRUE(wait_for_text(log, "Epoch 1/3", 60)) << read(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 60), 130) << read(log);
  expect_saved_after_signal(log, history, trace, "SIGINT (Ctrl-C)");
  EXPECT_TRUE(hidden_files().empty());
}

// A short MLP run, sent `signals` (one right after another) in its first epoch: it finishes the
// step, saves its history and trace and exits with `status`, naming `name`.
class SignalledRun : public RunEnd {
 protected:
  void expect_saved_after(const std::vector<int>& signals, int status, const char* name) {
    const fs::path log = dir_ / "log", history = dir_ / "h.json", trace = dir_ / "t.json";
    const pid_t pid = start("train --model mlp --epochs 3 --train-examples 10000 --history " +
                                history.string() + " --trace " + trace.string(),
                            log);
    ASSERT_TRUE(wait_for_text(log, "Epoch 1/3", 60)) << read(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const int signal : signals) kill(pid, signal);
    EXPECT_EQ(wait_exit(pid, 60), status) << read(log);
    EXPECT_EQ(read(log).find("second interrupt"), std::string::npos) << read(log);
    expect_saved_after_signal(log, history, trace, name);
    EXPECT_TRUE(hidden_files().empty());
  }
};

TEST_F(SignalledRun, SigtermDoesTheSameAndExits143) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  expect_saved_after({SIGTERM}, 143, "SIGTERM");
}

TEST_F(SignalledRun, SighupFromAClosedTerminalDoesTheSameAndExits129) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  expect_saved_after({SIGHUP}, 129, "SIGHUP (its terminal closed)");
}

// `timeout -s INT` signals the process and then its group: one request, delivered twice at
// once, which stopped the run at once without saving, as a second Ctrl-C does.
TEST_F(SignalledRun, TheSameSignalTwiceAtOnceIsOneRequest) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  expect_saved_after({SIGINT, SIGINT}, 130, "SIGINT (Ctrl-C)");
}

// `train | head -1`, or Ctrl-C taking `| tee log` with it: the first line printed after the
// reader has gone raises SIGPIPE, which killed the run with nothing saved and a temporary file
// left. The run stops as if interrupted and saves its history, with SIGPIPE's status.
TEST_F(RunEnd, AReaderThatGoesAwayStopsTheRunWhichSavesItsHistory) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path history = dir_ / "h.json";
  const Result r = mirrorlab::testing::run_command(
      "bash -c '" + kMirrorlab + " train --model mlp --epochs 3 --train-examples 10000 --history " +
      history.string() + " 2> /dev/null | head -1; exit ${PIPESTATUS[0]}'");
  EXPECT_EQ(r.status, 141) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  const nlohmann::json h = nlohmann::json::parse(read(history));
  EXPECT_EQ(h["stopped"]["reason"], "interrupted");
  EXPECT_NE(h["stopped"]["message"].get<std::string>().find("stopped by SIGPIPE"),
            std::string::npos)
      << h["stopped"];
  EXPECT_LT(h["steps"].get<int>(), 3 * 79);  // it stopped early
  EXPECT_TRUE(hidden_files().empty());
}

// A lesson saves nothing: Ctrl-C while it waits for an answer ends it then and there.
TEST_F(RunEnd, CtrlCEndsALessonWaitingForAnAnswer) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  // Its input a pipe that stays open and says nothing: a student who has not answered yet.
  const fs::path input = dir_ / "answers";
  ASSERT_EQ(mkfifo(input.c_str(), 0600), 0);
  const int keep_open = ::open(input.c_str(), O_RDWR);
  ASSERT_GE(keep_open, 0);
  const fs::path log = dir_ / "log";
  const pid_t pid = start("lesson run 1 < " + input.string(), log);
  ASSERT_TRUE(wait_for_text(log, "Your answer", 60)) << read(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 10), 130) << read(log);
  ::close(keep_open);
  EXPECT_EQ(read(log).find("checks passed"), std::string::npos) << read(log);
}

TEST_F(RunEnd, ASecondCtrlCStopsAtOnceKeepingTheOldFilesAndLeavingNoTemporary) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path log = dir_ / "log", history = dir_ / "h.json";
  { std::ofstream(history) << "the previous history"; }
  // Steps of 2 x 4096 CNN examples take about a second: the second signal comes mid-step.
  const pid_t pid = start(
      "train --model cnn --batch-per-replica 4096 --train-examples 60000 "
      "--history " +
          history.string(),
      log);
  ASSERT_TRUE(wait_for_text(log, "Epoch 1/", 60)) << read(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(pid, SIGINT);
  // Later than the same signal delivered twice at once (that is one request: see below).
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  kill(pid, SIGINT);
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_exit(pid, 30), 130) << read(log);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count(), 2.0);
  EXPECT_NE(read(log).find("second interrupt: stopping now"), std::string::npos) << read(log);
  EXPECT_EQ(read(history), "the previous history");
  EXPECT_TRUE(hidden_files().empty());
}

TEST_F(RunEnd, CtrlCStopsABenchAfterTheSizeUnderWayKeepingTheRowsMeasured) {
  const fs::path log = dir_ / "log";
  const pid_t pid = start("bench allreduce -b 1M -e 256M -f 2 -n 5 -w 1", log);
  ASSERT_TRUE(wait_for_text(log, "  1048576 ", 60)) << read(log);  // the first row is there
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, 60), 130) << read(log);
  const std::string out = read(log);
  EXPECT_NE(out.find("# Interrupted by SIGINT (Ctrl-C): the rows above are complete"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("one-shot on 2 devices"), std::string::npos) << "measured on: " << out;
}

// ---------------------------------------------------------------------------------------------
// Output files
// ---------------------------------------------------------------------------------------------

TEST_F(RunEnd, OutputFilesThatCannotBeWrittenAreRefusedBeforeTraining) {
  const fs::path real = dir_ / "real.json";
  { std::ofstream(real) << "real"; }
  fs::create_symlink(real, dir_ / "link.json");
  struct Case {
    std::string flags, words;
  };
  for (const Case& c : std::vector<Case>{
           {"--history " + (dir_ / "link.json").string(), "is a symbolic link"},
           {"--history /dev/null", "is a character device"},
           {"--history /proc/h.json", "cannot create a file in /proc"},
           {"--history " + (dir_ / "a.json").string() + " --trace " + (dir_ / "a.json").string(),
            "--history writes the same file"},
           {"--history " + (dir_ / "a.json").string() + " --trace " +
                (dir_ / "." / "a.json").string(),
            "--history writes the same file"}}) {
    const Result r =
        mirrorlab::testing::run_command(kMirrorlab + " train --max-steps 1 " + c.flags);
    EXPECT_EQ(r.status, 2) << c.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(c.words), std::string::npos) << c.flags << "\n" << r.output;
    EXPECT_FALSE(mirrorlab::testing::started_training(r.output)) << "trained first: " << r.output;
  }
  // Named from the folder it runs in, neither there yet: the trace was written over the history.
  const Result relative =
      mirrorlab::testing::run_command("cd " + dir_.string() + " && " + kMirrorlab +
                                      " train --max-steps 1 --history ./new.json --trace new.json");
  EXPECT_EQ(relative.status, 2) << relative.output;
  EXPECT_NE(relative.output.find("--history writes the same file"), std::string::npos)
      << relative.output;
  EXPECT_FALSE(fs::exists(dir_ / "new.json"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(read(real), "real");
  EXPECT_TRUE(hidden_files().empty());
}

TEST_F(RunEnd, ATraceOverAFullDiskKeepsThePreviousTraceAndExits1) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path trace = dir_ / "t.json";
  { std::ofstream(trace) << "the previous good trace"; }
  // A file size limit of 8 KiB stands in for a full disk (SIGXFSZ ignored, so the write fails).
  const Result r = mirrorlab::testing::run_command(
      "sh -c \"trap '' XFSZ; ulimit -f 8; exec " + kMirrorlab +
      " train --model mlp --train-examples 2048 --epochs 1 --trace " + trace.string() + "\"");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("--trace " + trace.string() + ": write failed: File too large"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read(trace), "the previous good trace");
  EXPECT_TRUE(hidden_files().empty());
}

// A checkpoint that cannot be written is said as it fails, the run goes on, and its end counts
// them once (the last epoch's was tried twice, as it closed and as the run ended, and said twice).
TEST_F(RunEnd, CheckpointsOverAFullDiskAreEachSaidOnceAndExit1) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const fs::path folder = dir_ / "checkpoints";
  const Result r = mirrorlab::testing::run_command(
      "sh -c \"trap '' XFSZ; ulimit -f 8; exec " + kMirrorlab +
      " train --model mlp --train-examples 2048 --epochs 2 --checkpoint-dir " + folder.string() +
      "\"");
  EXPECT_EQ(r.status, 1) << r.output;
  const auto count = [&r](const std::string& what) {
    std::size_t n = 0;
    for (auto at = r.output.find(what); at != std::string::npos; at = r.output.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("error: checkpoint not saved: "), 2u) << r.output;
  EXPECT_EQ(count("ckpt-00000032.safetensors: write failed"), 1u) << r.output;
  EXPECT_EQ(count("error: 2 checkpoints not saved (said above)"), 1u) << r.output;
  EXPECT_TRUE(fs::is_empty(folder));
}

TEST_F(RunEnd, AStandardOutputThatRefusesWritesIsAnError) {
  // In a shell of its own: run_command sends stderr where stdout goes, and it must not be
  // /dev/full too.
  const Result r =
      mirrorlab::testing::run_command("sh -c '" + kMirrorlab + " devices > /dev/full'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("writing to standard output failed: No space left on device"),
            std::string::npos)
      << r.output;
}

}  // namespace
