// The mirrorlab command as a user runs it: exit status and what it prints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/session/text/console_text.h"
#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"
#include "tests/support/posix_regex.h"
#include "tests/support/temp_folder.h"

namespace {

using Result = mirrorlab::testing::CommandOutput;

Result run(const std::string& args) { return mirrorlab::testing::run_mirrorlab(args); }

bool has_dataset() { return mirrorlab::testing::has_fashion_mnist(); }

struct BadInput {
  const char* args;
  const char* expected_words;
};

void PrintTo(const BadInput& input, std::ostream* os) { *os << '"' << input.args << '"'; }

class CliRejectsBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRejectsBadInput, WithExitStatus2AndASentence) {
  const Result r = run(std::string("train ") + GetParam().args);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().expected_words), std::string::npos) << r.output;
  EXPECT_FALSE(mirrorlab::testing::started_training(r.output))
      << "must not start training: " << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CliRejectsBadInput,
    ::testing::Values(
        BadInput{"--gpus 0", "--gpus"}, BadInput{"--gpus 65", "--gpus"},
        BadInput{"--memory-limit -5", "--memory-limit"},
        BadInput{"--memory-limit 0", "--memory-limit"}, BadInput{"--model resnet", "--model"},
        BadInput{"--batch-per-replica 0", "--batch-per-replica"},
        BadInput{"--epochs 0", "--epochs"}, BadInput{"--optimizer rmsprop", "--optimizer"},
        BadInput{"--lr -1", "--lr"}, BadInput{"--allreduce butterfly", "--allreduce"},
        BadInput{"--gpus 3 --memory-limit 512,1024", "one per device"},
        BadInput{"--allreduce nccl", "NCCL"}, BadInput{"--no-such-flag", "no-such-flag"},
        BadInput{"--gpus two", "--gpus"}, BadInput{"--backend tpu", "--backend"},
        BadInput{"--devices 0", "use it with --backend cuda"},
        BadInput{"--sm-split", "use it with --backend cuda"},
        BadInput{"--backend auto --devices 0,1 --sm-split", "pick one GPU"},
        BadInput{"--backend auto --devices 0,1 --gpus 3", "--gpus is 3"},
        // Files written at the end are checked at the start: a long run never ends unsaved.
        BadInput{"--history /no-such-folder/history.json", "/no-such-folder does not exist"},
        BadInput{"--trace /tmp", "that is a folder"}));

TEST(Cli, HelpListsTheFlagsAndExitsZero) {
  const Result r = run("train --help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--model", "--backend", "--devices", "--sm-split", "--gpus",
                           "--memory-limit", "--batch-per-replica", "--epochs", "--max-steps",
                           "--optimizer", "--lr", "--allreduce", "--seed", "--data", "--history"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag << " missing from:\n" << r.output;
  }
}

TEST(Cli, NoSubcommandSaysWhatToDo) {
  const Result r = run("");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("train"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Usage: mirrorlab [OPTIONS] SUBCOMMAND"), std::string::npos) << r.output;
  // A command of commands, given alone: its help with its whole name, as one types it (CLI11's
  // own usage line said "Usage: lesson [OPTIONS] SUBCOMMAND").
  const Result lesson = run("lesson");
  EXPECT_EQ(lesson.status, 2) << lesson.output;
  EXPECT_NE(lesson.output.find("Usage: mirrorlab lesson [OPTIONS] SUBCOMMAND"), std::string::npos)
      << lesson.output;
  EXPECT_NE(lesson.output.find("mirrorlab lesson: choose a command (list, run, check)"),
            std::string::npos)
      << lesson.output;
}

// More training examples than the data holds were cut to what it holds without a word.
TEST(Cli, MoreTrainingExamplesThanTheDataHoldsAreRefused) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist missing";
  const Result r = run("train --model mlp --train-examples 70000 --max-steps 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--train-examples 70000: /usr/share/datasets/fashion-mnist holds 60000 "
                          "training images"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(mirrorlab::testing::started_training(r.output))
      << "must not start training: " << r.output;
}

TEST(Cli, MissingDataFolderNamesItAndTheFix) {
  const Result r = run("train --data /nonexistent/fashion");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/fashion"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dataset-fashion-mnist"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--data"), std::string::npos) << r.output;  // the app's own advice
}

namespace address_space {

std::string under_limit(int kib, const std::string& command) {
  return "sh -c 'ulimit -v " + std::to_string(kib) + " && exec " + command + "'";
}

// True when the shared libraries load and start under `kib` KiB, OpenBLAS starting no thread
// (OPENBLAS_NUM_THREADS=1 given), and mirrorlab's main then runs (--help).
bool libraries_start(int kib) {
  return mirrorlab::testing::run_command(
             "OPENBLAS_NUM_THREADS=1 " +
             under_limit(kib, std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab --help") +
             " >/dev/null")
             .status == 0;
}

}  // namespace address_space

// Under `ulimit -v` a run either trains or stops saying why; it never hangs (OpenBLAS retries a
// failed mapping of its work buffer for ever, so the run must not start what it cannot finish),
// and never dies before saying why. Limits too tight for the shared libraries themselves to
// load and start (the loader cannot map one, or cuBLAS's own initializer fails, as in the CUDA
// build) run nothing of ours: `mirrorlab --help` fails under them too, and they are passed over.
// The runs are made without OPENBLAS_NUM_THREADS, as most users run it: OpenBLAS would start a
// thread per core when it loads, and just above the lowest limit the libraries start under,
// those threads' stacks no longer fit and OpenBLAS stopped the process before main (seen on a
// 16-core machine, and here on 2 cores in a window of a few MiB); main.cpp keeps OpenBLAS from
// starting them, which the finer sweep from that lowest limit up checks.
TEST(Cli, UnderAnAddressSpaceLimitARunTrainsOrSaysWhyNeverHangs) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve terabytes of address space: ulimit -v cannot apply";
#endif
  using address_space::libraries_start;
  // The lowest limit the libraries start under, to 1 MiB (between 256 MiB and 8 GiB).
  int low = 256 << 10, high = 8 << 20;
  ASSERT_TRUE(libraries_start(high)) << "mirrorlab --help fails under ulimit -v 8 GiB";
  while (high - low > 1024) {
    const int middle = low + (high - low) / 2;
    (libraries_start(middle) ? high : low) = middle;
  }
  std::vector<int> limits;  // KiB
  for (int step = 0; step <= 24; step += 2) limits.push_back(high + (step << 10));
  for (const int mib : {1000, 1100, 1200, 1300, 1500, 1700, 1900, 2300, 3000}) {
    limits.push_back(mib << 10);
  }
  int trained = 0, refused = 0;
  for (const int gpus : {2, 4}) {
    for (const int kib : limits) {
      const std::string command =
          "env -u OPENBLAS_NUM_THREADS " +
          address_space::under_limit(
              kib, "timeout -k 5 60 " + std::string(MIRRORLAB_BINARY_DIR) +
                       "/app/mirrorlab train --model mlp --gpus " + std::to_string(gpus) +
                       " --memory-limit 100 --train-examples 512 --max-steps 3 --epochs 1");
      const Result r = mirrorlab::testing::run_command(command);
      SCOPED_TRACE(command + "\n" + r.output);
      EXPECT_TRUE(r.status != 124 && r.status != 137) << "hung";
      EXPECT_EQ(r.output.find("OpenBLAS blas_thread_init"), std::string::npos)
          << "OpenBLAS started its threads";
      if (r.status == 0) {
        ++trained;
      } else if (!libraries_start(kib)) {
        // The libraries could not load and start: nothing of ours ran.
      } else {
        ++refused;
        EXPECT_TRUE(r.status == 1 || r.status == 2);
        EXPECT_NE(r.output.find("mirrorlab: error:"), std::string::npos);
        EXPECT_TRUE(r.output.find("ulimit -v") != std::string::npos) << "must say what limits it";
      }
    }
  }
  EXPECT_GT(trained, 0);  // the sweep reaches limits where training works
  EXPECT_GT(refused, 0);  // and limits where mirrorlab itself refuses
}

TEST(Cli, MemoryLimitTooSmallIsAClearError) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const Result r = run("train --gpus 2 --memory-limit 1 --train-examples 256");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("out of memory"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--memory-limit"), std::string::npos) << r.output;
}

// 1000 examples in global batches of 48 on 3 replicas leave 40: TensorFlow 2.21 splits them
// 14 + 14 + 12, and model.fit weighs the replicas' mean losses alike
// (docs/tensorflow-conformance.md).
TEST(Cli, SaysHowTheUnevenLastBatchIsSplitAndWeighed) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::string flags =
      "train --model mlp --gpus 3 --batch-per-replica 16 --epochs 1 --max-steps 1 "
      "--train-examples 1000";
  const Result keras = run(flags);
  ASSERT_EQ(keras.status, 0) << keras.output;
  EXPECT_NE(keras.output.find("Last batch of each epoch: 40 examples, split 14 + 14 + 12"),
            std::string::npos)
      << keras.output;
  EXPECT_NE(keras.output.find("Loss scaling replica-mean, as Keras' model.fit"), std::string::npos)
      << keras.output;
  const Result exact = run(flags + " --loss-scaling batch-mean");
  ASSERT_EQ(exact.status, 0) << exact.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(exact.output)
                .find("Loss scaling batch-mean: on that batch each example weighs the same"),
            std::string::npos)
      << exact.output;
  EXPECT_EQ(keras.output.find("Keras 3.15's model.fit fails"), std::string::npos)
      << "its first batch is a full one";
  // 40 examples alone: the first batch is the uneven one, on which Keras' model.fit fails.
  const Result only =
      run("train --model mlp --gpus 3 --batch-per-replica 16 --epochs 1 "
          "--train-examples 40");
  ASSERT_EQ(only.status, 0) << only.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(only.output)
                .find("Keras 3.15's model.fit fails on this: its first global batch is "
                      "uneven"),
            std::string::npos)
      << only.output;
  EXPECT_EQ(only.output.find("Loss scaling replica-mean, as Keras' model.fit:"), std::string::npos)
      << only.output;
  const Result tutorial = run(flags + " --loss-scaling global-batch");
  ASSERT_EQ(tutorial.status, 0) << tutorial.output;
  EXPECT_NE(
      mirrorlab::testing::unwrapped(tutorial.output)
          .find("Loss scaling global-batch, as compute_average_loss(global_batch_size=48): on "
                "that batch each example weighs 1/48, so its step is 40/48 of a full batch's"),
      std::string::npos)
      << tutorial.output;
  const Result even =
      run("train --model mlp --gpus 2 --batch-per-replica 50 --epochs 1 "
          "--max-steps 1 --train-examples 1000");
  ASSERT_EQ(even.status, 0) << even.output;
  EXPECT_EQ(even.output.find("Last batch of each epoch"), std::string::npos) << even.output;
  const Result short_but_even =
      run("train --model mlp --gpus 2 --batch-per-replica 64 "
          "--epochs 1 --max-steps 1 --train-examples 1000");
  ASSERT_EQ(short_but_even.status, 0) << short_but_even.output;
  EXPECT_NE(short_but_even.output.find("104 examples, split 52 + 52"), std::string::npos)
      << short_but_even.output;
  EXPECT_EQ(short_but_even.output.find("Loss scaling"), std::string::npos) << short_but_even.output;
}

TEST(Cli, ShortRealRunPrintsTensorFlowStyleAndWritesHistory) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const std::filesystem::path history =
      std::filesystem::temp_directory_path() /
      ("mirrorlab_cli_history_" + std::to_string(::getpid()) + ".json");
  const Result r =
      run("train --model mlp --gpus 2 --epochs 2 --max-steps 6 --batch-per-replica 32 "
          "--train-examples 2000 --history " +
          history.string());
  ASSERT_EQ(r.status, 0) << r.output;
  // TensorFlow 2.21's own lines, as scripts/check-tensorflow saw it log them, marked as lines
  // TensorFlow would log (on stderr, as it writes them; stdout below).
  EXPECT_NE(r.output.find("(as TensorFlow logs it) INFO:tensorflow:Using MirroredStrategy with "
                          "devices "
                          "('/job:localhost/replica:0/task:0/device:GPU:0', "
                          "'/job:localhost/replica:0/task:0/device:GPU:1')\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(as TensorFlow logs it) INFO:tensorflow:Collective all_reduce "
                          "tensors: 6 all_reduces, "
                          "num_devices = 2, group_size = 2, "
                          "implementation = CommunicationImplementation.RING, num_packs = 1\n"),
            std::string::npos);
  const Result stdout_alone = mirrorlab::testing::run_command(
      "(" + std::string(MIRRORLAB_BINARY_DIR) +
      "/app/mirrorlab train --model mlp --gpus 2 --max-steps 1 --train-examples 256 2>/dev/null)");
  ASSERT_EQ(stdout_alone.status, 0);
  EXPECT_EQ(stdout_alone.output.find("tensorflow"), std::string::npos) << stdout_alone.output;
  EXPECT_NE(stdout_alone.output.find("Test accuracy"), std::string::npos);
  // It warns of no NCCL fallback any more: that was older TensorFlow.
  EXPECT_EQ(r.output.find("WARNING"), std::string::npos);
  // Keras 3's bar, stopped at 6 of 32 steps (no terminal: the part to go is drawn '─').
  EXPECT_NE(r.output.find(" 6/32 ━━━─────────────────"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("val_accuracy"), std::string::npos);
  EXPECT_NE(r.output.find("Stopped after --max-steps 6"), std::string::npos);
  // The rate over every step, then after the first (which pays what is made once), in numbers.
  EXPECT_TRUE(mirrorlab::testing::regex_found(
      mirrorlab::testing::unwrapped(r.output),
      "Training: [0-9]+ images/s over 6 steps; [0-9]+ after the first, "
      "which took [0-9]+ ms"))
      << r.output;
  // Each device's peak memory, separated, the line ending with the last (it ended in ";").
  EXPECT_TRUE(mirrorlab::testing::regex_found(
      r.output, "\nPeak memory: /gpu:0 [0-9.]+ of 1024 MiB; /gpu:1 [0-9.]+ of 1024 MiB\n"))
      << r.output;

  std::ifstream in(history);
  ASSERT_TRUE(in) << "no history file at " << history;
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["epochs"].size(), 1u);
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy", "seconds"}) {
    EXPECT_TRUE(j["epochs"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["steps"], 6);
  EXPECT_GT(j["final_train_loss"].get<double>(), 0.0);
  EXPECT_GT(j["weights_l2"].get<double>(), 0.0);
  for (const char* device : {"/gpu:0", "/gpu:1"}) {
    ASSERT_TRUE(j["phase_seconds"].contains(device)) << device;
    EXPECT_GT(j["phase_seconds"][device]["forward"].get<double>(), 0.0);
    EXPECT_GT(j["phase_seconds"][device]["all-reduce"].get<double>(), 0.0);
  }
  std::filesystem::remove(history);
}

}  // namespace

namespace {

TEST(CliBench, AllReduceSweepPrintsTheTableAndChecksEveryRow) {
  const Result r = run("bench allreduce --gpus 3 -b 4 -e 4K -f 8 -n 2 -w 1");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* words :
       {"algbw", "busbw", "#wrong", "%bound", "B = ", "# reduce-to-one on 3", "# ring on 3",
        "# one-shot on 3", "# nccl on 3 devices: skipped: ", "Out of bounds values : 0 OK"}) {
    EXPECT_NE(r.output.find(words), std::string::npos) << words << " missing from:\n" << r.output;
  }
  // Sizes 4, 32, 256 and 2048 bytes, for each of the three algorithms that run here.
  EXPECT_NE(r.output.find("        2048          512  float    sum"), std::string::npos)
      << r.output;
}

TEST(CliBench, RejectsBadSweepsWithStatus2) {
  // Where a GPU is visible, --backend cuda runs (test_cli_cuda covers that): refused only here.
  const bool gpu_visible = mirrorlab::testing::mirrorlab_sees_a_gpu();
  for (const char* args :
       {"bench allreduce -b 1M -e 1K", "bench allreduce -f 1", "bench allreduce --algorithms tree",
        "bench allreduce -n 0", "bench allreduce -e 2G --memory-limit 1024",
        "bench allreduce -e 16M --memory-limit 1024,8", "bench allreduce -b lots", "bench",
        "bench allreduce --backend cuda", "bench allreduce --gpus 1"}) {
    if (gpu_visible && std::string(args) == "bench allreduce --backend cuda") continue;
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("float"), std::string::npos) << args << " must not run:\n" << r.output;
  }
}

}  // namespace

namespace {

// `mirrorlab devices` lists what this machine has; on a machine with no GPU, CUDA says why.
bool gpu_visible() { return mirrorlab::testing::mirrorlab_sees_a_gpu(); }

TEST(CliDevices, ListsPhysicalAndLogicalDevicesAsTensorFlowDoes) {
  const Result r = run("devices --backend cpu --gpus 3 --memory-limit 64");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* words :
       {"PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')", "CUDA: ",
        "1 Physical CPU, 3 Logical GPUs (CPU-backed virtual GPUs: /gpu:0 64 MiB /gpu:1 64 MiB "
        "/gpu:2 64 MiB)",
        "LogicalDevice(name='/device:CPU:0', device_type='CPU')",
        "LogicalDevice(name='/device:GPU:2', device_type='GPU')"}) {
    EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find(words), std::string::npos)
        << words << " missing from:\n"
        << r.output;
  }
}

TEST(CliDevices, AutoFallsBackToTheCpuSayingWhyWhenNoGpuIsVisible) {
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible here: auto picks it";
  const Result r = run("devices --backend auto");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("no CUDA GPU visible ("), std::string::npos) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find("using CPU-backed virtual GPUs"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("PhysicalDevice(name='/physical_device:GPU"), std::string::npos);
  // The reason is said once: under CUDA's line, or (a build without CUDA) in auto's fallback.
  const std::size_t at = r.output.find("no CUDA GPU visible (");
  const std::string reason = r.output.substr(at, r.output.find_first_of(";\n", at) - at);
  EXPECT_EQ(r.output.rfind(reason), at) << r.output;
  EXPECT_EQ(r.output.find("no CUDA GPU visible (said above)") == std::string::npos,
            r.output.find("--backend auto: " + reason) != std::string::npos)
      << r.output;
}

TEST(CliDevices, BackendCudaWithoutAGpuIsAClearErrorWithStatus2) {
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible here";
  for (const char* args : {"devices --backend cuda", "devices --backend cuda --devices 0,1",
                           "devices --devices 1", "devices --sm-split"}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("no CUDA GPU visible"), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("LogicalDevice(name='/device:GPU"), std::string::npos) << r.output;
  }
}

TEST(CliDevices, TrainWithAutoRunsOnCpuVirtualGpusWhenNoGpuIsVisible) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible here: auto trains on it (test_cli_cuda)";
  const Result r =
      run("train --backend auto --model mlp --gpus 2 --epochs 1 --max-steps 2 "
          "--batch-per-replica 16 --train-examples 256");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find("using CPU-backed virtual GPUs"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 Physical CPU, 2 Logical GPUs"), std::string::npos) << r.output;
}

// Flags that need a CUDA GPU, on a machine without one: a clear error with status 2, said before
// the dataset is read. The --data folder does not exist, so a command that read the dataset
// first would fail on it instead (status 1, naming the folder, as MissingDataFolder shows).
TEST(CliDevices, TrainAndGuiOnCudaWithoutAGpuSayNoGpuIsVisibleBeforeReadingTheDataset) {
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible here";
  const std::string missing = " --data /nonexistent/fashion";
  std::vector<std::string> commands = {
      "train --backend cuda", "train --backend cuda --gpus 4", "train --backend auto --devices 0",
      "train --backend auto --sm-split", "train --backend cuda --allreduce nccl"};
  // A build without the GUI says so first, whatever the flags.
  if (run("gui --check-display").output.find("this build has no GUI") == std::string::npos) {
    commands.push_back("gui --backend cuda");
  }
  for (const std::string& args : commands) {
    const Result r = run(args + missing);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("no CUDA GPU visible"), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("use --backend cpu"), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << args << "\n"
                                                                         << r.output;
    EXPECT_EQ(r.output.find("/nonexistent/fashion"), std::string::npos) << args << "\n" << r.output;
  }
}

// --allreduce nccl where NCCL cannot run (CPU-backed virtual GPUs): the choice's own sentence,
// status 2, before the dataset is read.
TEST(Cli, NcclOnCpuVirtualGpusIsRefusedWithItsReasonBeforeReadingTheDataset) {
  const Result r = run("train --backend cpu --gpus 2 --allreduce nccl --data /nonexistent/fashion");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(r.output.find("NCCL all-reduce needs one CUDA GPU per replica") !=
                  std::string::npos ||
              r.output.find("this build has no NCCL") != std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("use auto, reduce-to-one, ring or one-shot"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Loading Fashion-MNIST"), std::string::npos) << r.output;
}

// One convention for bad input everywhere: a malformed lesson is exit status 2 for `lesson check`
// as for `lesson run` (check said 1, which `lesson run` gives a lesson whose checks fail).
// `lesson list` numbers the lessons (which `lesson run` takes), each title on its number's line and
// its id, minutes and needs under it, every line within 80 columns, and says what its minutes are.
TEST(CliLesson, ListNumbersTheLessonsWithin80Columns) {
#ifndef MIRRORLAB_HAVE_LESSONS
  GTEST_SKIP() << "this build has no lessons (libtomlplusplus-dev or libmd4c-dev missing)";
#endif
  const Result r = mirrorlab::testing::run_command(  // not a terminal, COLUMNS unset: 80 columns
      "env -u COLUMNS " MIRRORLAB_BINARY_DIR "/app/mirrorlab lesson list");
  ASSERT_EQ(r.status, 0) << r.output;
  std::istringstream lines(r.output);
  std::string line;
  int rows = 0;
  bool id_next = false;
  while (std::getline(lines, line) && !line.empty()) {
    EXPECT_LE(line.size(), 80u) << line;
    if (line.substr(0, 4) != "    ") {
      ++rows;
      EXPECT_EQ(line.substr(0, 4), (rows < 10 ? " " : "") + std::to_string(rows) + "  ") << line;
      id_next = true;
      continue;
    }
    if (id_next) {  // "    mirrored-strategy, 8 minutes. Needs: ..."
      const std::size_t comma = line.find(", ");
      ASSERT_NE(comma, std::string::npos) << line;
      EXPECT_EQ(line.find(' ', 4), comma + 1) << "the id is one word:\n" << line;
      EXPECT_NE(line.find(" minutes. "), std::string::npos) << line;
    }
    id_next = false;
  }
  EXPECT_EQ(rows, 11);
  EXPECT_NE(r.output.find("Minutes are class time"), std::string::npos) << r.output;
  // `lesson run` takes the numbers: past the last, it says how many there are.
  const Result past = run("lesson run 12 --non-interactive");
  EXPECT_EQ(past.status, 2) << past.output;
  EXPECT_NE(past.output.find("numbered 1 to 11"), std::string::npos) << past.output;
}

// The course's text is wrapped to the terminal's width, as COLUMNS says it (a terminal's own
// width where COLUMNS is unset): 40 to 100 columns, 80 where it says no whole number.
TEST(CliLesson, TheTextFitsTheTerminalsWidth) {
#ifndef MIRRORLAB_HAVE_LESSONS
  GTEST_SKIP() << "this build has no lessons (libtomlplusplus-dev or libmd4c-dev missing)";
#endif
  for (const auto& [columns, widest] : std::vector<std::pair<std::string, std::size_t>>{
           {"50", 50}, {"20", 40}, {"500", 100}, {"abc", 80}, {"", 80}}) {
    for (const std::string command : {"lesson list", "lesson run 1 --non-interactive"}) {
      const Result r = mirrorlab::testing::run_command(
          "env COLUMNS=" + columns + " " + MIRRORLAB_BINARY_DIR "/app/mirrorlab " + command);
      ASSERT_EQ(r.status, 0) << r.output;
      std::istringstream lines(r.output);
      std::size_t most = 0;
      for (std::string line; std::getline(lines, line);) {
        // The run's own lines (Keras' progress, TensorFlow's log) are not the course's text; a
        // folder's path is said whole.
        if (line.find("INFO:tensorflow") != std::string::npos ||
            line.find("━") != std::string::npos || line.starts_with("The lesson files are in ")) {
          continue;
        }
        most = std::max(most, mirrorlab::core::character_count(line));
        EXPECT_LE(mirrorlab::core::character_count(line), widest)
            << "COLUMNS=" << columns << " " << command << ":\n"
            << line;
      }
      if (command == "lesson list") {
        EXPECT_GE(most, widest - 12) << "COLUMNS=" << columns << ": the width is used";
      }
    }
  }
}

// `train`'s own lines within the terminal's width (TensorFlow's log lines, Keras' progress bar
// and model summary are theirs, kept whole; a folder's path is said whole): an uneven last batch,
// packs, the rate.
TEST(CliTrain, ItsOwnLinesFitTheTerminalsWidth) {
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  for (const auto& [columns, widest] :
       std::vector<std::pair<std::string, std::size_t>>{{"50", 50}, {"80", 80}}) {
    const Result r = mirrorlab::testing::run_command(
        "env COLUMNS=" + columns + " " + MIRRORLAB_BINARY_DIR +
        "/app/mirrorlab train --model mlp --gpus 3 --epochs 1 --max-steps 11 "
        "--batch-per-replica 16 --train-examples 500 --bytes-per-pack 65536");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("Last batch of each epoch"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Gradient packs"), std::string::npos) << r.output;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      // Keras' own: its progress bar and its model summary's box.
      bool keras = false;
      for (const char* theirs : {"INFO:tensorflow", "━", "│", "┃", "─"}) {
        keras = keras || line.find(theirs) != std::string::npos;
      }
      if (keras) continue;
      const std::size_t words = line.find_first_not_of(' ');
      if (words != std::string::npos && line.find(' ', words) == std::string::npos) continue;
      // A table's row (its columns apart by spaces) within 80 columns however narrow the
      // terminal; prose within the terminal's width.
      const bool row = line.find("   ") != std::string::npos;
      EXPECT_LE(mirrorlab::core::character_count(line),
                row ? std::max<std::size_t>(widest, 80) : widest)
          << "COLUMNS=" << columns << ":\n"
          << line;
    }
  }
}

// `lesson run` in a terminal: a prediction that is no answer at all is told so ("abc" for a
// number, "maybe" for a choice of no or yes), and one typed with its digits grouped is read.
TEST(CliLesson, APredictionThatIsNoAnswerIsToldSo) {
#ifndef MIRRORLAB_HAVE_LESSONS
  GTEST_SKIP() << "this build has no lessons (libtomlplusplus-dev or libmd4c-dev missing)";
#endif
  if (!has_dataset()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto typed = [](const std::string& answer) {
    std::string lines;  // every question and every "Enter: next step" of lesson 1 gets it
    for (int i = 0; i < 12; ++i) lines += answer + "\\n";
    return mirrorlab::testing::run_command("printf '" + lines + "' | " +
                                           std::string(MIRRORLAB_BINARY_DIR) +
                                           "/app/mirrorlab lesson run 1");
  };
  const Result words = typed("abc");
  EXPECT_EQ(words.status, 0) << words.output;
  EXPECT_NE(words.output.find("(you said\n  abc, which is not a number)"), std::string::npos)
      << words.output;
  const Result maybe = typed("maybe");
  EXPECT_NE(maybe.output.find("maybe, which is none of the choices)"), std::string::npos)
      << maybe.output;
  // The 32 examples /gpu:1 gets, typed with spaces around: read, right, echoed without them.
  const Result spaced = typed(" 32 ");
  EXPECT_NE(spaced.output.find("get?: 32 (you were"), std::string::npos) << spaced.output;
  EXPECT_NE(spaced.output.find("said 32, which is none"), std::string::npos) << spaced.output;
  // Lesson 1's 3 questions all answered: one right (32 is a choice of none of the others).
  EXPECT_NE(spaced.output.find("5 of 5 checks passed; 1 of 3 answers right."), std::string::npos)
      << spaced.output;
  // Skipped (Enter) is no answer: none given, none counted.
  const Result skipped = typed("");
  EXPECT_NE(skipped.output.find("5 of 5 checks passed.\n"), std::string::npos) << skipped.output;
}

// `cmake --install` into a prefix gives a mirrorlab that finds the lessons installed beside it,
// not the source tree's it was built from.
TEST(CliLesson, AnInstalledMirrorlabReadsTheLessonsInstalledBesideIt) {
#ifndef MIRRORLAB_HAVE_LESSONS
  GTEST_SKIP() << "this build has no lessons (libtomlplusplus-dev or libmd4c-dev missing)";
#endif
  mirrorlab::testing::TempFolder prefix("cli-install");
  const Result install =
      mirrorlab::testing::run_command(std::string(MIRRORLAB_CMAKE) + " --install " +
                                      MIRRORLAB_BINARY_DIR + " --prefix " + prefix.path().string());
  ASSERT_EQ(install.status, 0) << install.output;
  const std::filesystem::path lessons = prefix / "share/mirrorlab/lessons";
  EXPECT_TRUE(std::filesystem::exists(lessons / "01-mirrored-strategy.md")) << install.output;
  EXPECT_FALSE(std::filesystem::exists(lessons / "player")) << "the player's sources went too";
  const Result r = mirrorlab::testing::run_command(
      "env -u MIRRORLAB_LESSONS " + (prefix / "bin/mirrorlab").string() + " lesson list");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("The lesson files are in " + lessons.string()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("    several-machines, "), std::string::npos) << r.output;
  // Without them it says where it looked and how to name a folder.
  std::filesystem::remove_all(prefix / "share");
  const Result lost =
      mirrorlab::testing::run_command("env MIRRORLAB_LESSONS=" + lessons.string() + " " +
                                      (prefix / "bin/mirrorlab").string() + " lesson list");
  EXPECT_EQ(lost.status, 2) << lost.output;
  EXPECT_NE(lost.output.find("no lesson folder there"), std::string::npos) << lost.output;
  EXPECT_NE(lost.output.find("--lessons DIR"), std::string::npos) << lost.output;
}

TEST(CliLesson, CheckGivesAMalformedLessonStatus2AsRunDoes) {
#ifndef MIRRORLAB_HAVE_LESSONS
  GTEST_SKIP() << "this build has no lessons (libtomlplusplus-dev or libmd4c-dev missing)";
#endif
  mirrorlab::testing::TempFolder folder("cli-lesson");
  const std::filesystem::path bad = folder / "bad.md";
  std::ofstream(bad) << "# A lesson\n\n```toml\nid = \"a\"\nminutes = 5\n```\n\n## Step\n\n"
                        "```toml\ndo = [{ pause_at = \"allreduce-step-99\" }]\n[setup]\n"
                        "gpus = 2\n```\n";
  for (const std::string command : {"lesson check ", "lesson run --non-interactive "}) {
    const Result r = run(command + bad.string());
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(bad.string() + ":11: `pause_at = \"allreduce-step-99\"`"),
              std::string::npos)
        << command << "\n"
        << r.output;
  }
  // Well formed: 0, a byte-order mark first or not.
  const std::filesystem::path good = folder / "good.md";
  std::ofstream(good) << "\xEF\xBB\xBF"
                      << mirrorlab::testing::read_file(std::string(MIRRORLAB_SOURCE_DIR) +
                                                       "/lessons/01-mirrored-strategy.md");
  const Result r = run("lesson check " + good.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(mirrorlab::testing::unwrapped(r.output).find("well formed"), std::string::npos)
      << r.output;
  // And the help says so.
  EXPECT_NE(mirrorlab::testing::unwrapped(run("lesson check --help").output)
                .find("exit status 2 for a malformed lesson"),
            std::string::npos);
}

}  // namespace
