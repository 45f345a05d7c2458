// The command line's side of multi-worker training (app/train/workers.h), in-process: what a launch
// without mpirun or without MPI is told, each worker's TF_CONFIG, the flags compared between
// workers, and the workers' parts merged into one history and one trace.
#include <gtest/gtest.h>

#include "CLI/CLI.hpp"
#include "app/command_line.h"
#include "app/flags/train_flags.h"
#include "app/train/workers.h"
#include "tests/support/settings_variations.h"

namespace mirrorlab::app {
namespace {

// Two workers on two hosts, without MPI: only what the functions read.
class FakeWorkers final : public vgpu::WorkerGroup {
 public:
  explicit FakeWorkers(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  const std::vector<vgpu::WorkerPlace>& places() const override { return places_; }
  std::string transport() const override { return "none"; }
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  void broadcast(std::span<float>, int) override {}
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine, mine}; }
  void set_activity(std::string) override {}

 private:
  int rank_;
  std::vector<vgpu::WorkerPlace> places_{{"alpha", 100}, {"beta", 200}};
};

TEST(CheckLaunch, AloneOrUnderMpirunWithMpiIsFine) {
  EXPECT_EQ(check_launch(0, vgpu::Launch{}, false), "");
  EXPECT_EQ(check_launch(1, vgpu::Launch{}, true), "");
  EXPECT_EQ(check_launch(0, vgpu::Launch{2, 1, "mpirun (Open MPI)"}, true), "");
  EXPECT_EQ(check_launch(2, vgpu::Launch{2, 0, "mpirun (Open MPI)"}, true), "");
}

TEST(CheckLaunch, MpirunWithoutMpiBuiltSaysWhatToInstall) {
  const std::string said = check_launch(0, vgpu::Launch{2, 0, "mpirun (Open MPI)"}, false);
  EXPECT_NE(said.find("built without MPI"), std::string::npos) << said;
  EXPECT_NE(said.find("apt-get install libopenmpi-dev openmpi-bin"), std::string::npos) << said;
}

TEST(CheckLaunch, WorkersWithoutMpirunSayHowToLaunch) {
  const std::string said = check_launch(3, vgpu::Launch{}, true);
  EXPECT_NE(said.find("mpirun -np 3 mirrorlab train"), std::string::npos) << said;
  EXPECT_NE(check_launch(3, vgpu::Launch{}, false).find("built without MPI"), std::string::npos);
  const std::string disagree = check_launch(3, vgpu::Launch{2, 0, "mpirun (Open MPI)"}, true);
  EXPECT_NE(disagree.find("--workers 3 but mpirun (Open MPI) started 2"), std::string::npos)
      << disagree;
}

TEST(TfConfig, IsTheSeedNotesShapeWithThisWorkersTask) {
  EXPECT_EQ(
      vgpu::tf_config(FakeWorkers(1)),
      R"({"cluster":{"worker":["alpha:20000","beta:20001"]},"task":{"type":"worker","index":1}})");
}

TEST(WorkerFlags, EqualFlagsPassAndTheFirstDifferenceIsNamed) {
  TrainOptions a, b;
  EXPECT_EQ(compare_worker_flags({train_flag_lines(a), train_flag_lines(b)}), "");
  a.given = {"--lr"};
  b.given = {"--lr", "--seed"};
  b.settings.seed = 7;
  b.settings.optimizer.learning_rate = 0.5f;
  const std::string said = compare_worker_flags({train_flag_lines(a), train_flag_lines(b)});
  EXPECT_NE(said.find("worker 1 has --lr 0.5 where worker 0 has --lr 0.001"), std::string::npos)
      << said;
  b = a;
  b.data_dir = "/elsewhere";  // a folder of another host: compared as data, not as a flag
  EXPECT_EQ(compare_worker_flags({train_flag_lines(a), train_flag_lines(b)}), "");
}

// Every setting is compared between workers, named by its flag (or its key, where no flag sets
// it): a setting added to core/settings is checked across workers with no change in app/.
TEST(WorkerFlags, EverySettingIsComparedByItsFlag) {
  const TrainOptions a;
  for (const mirrorlab::settings_test::Variation& v :
       mirrorlab::settings_test::every_setting_varied(a.settings)) {
    SCOPED_TRACE(v.key);
    TrainOptions b = a;
    b.settings = v.settings;
    const std::string flag = flag_for_setting(v.key);
    if (!flag.empty()) b.given.insert(flag);
    const std::string said = compare_worker_flags({train_flag_lines(a), train_flag_lines(b)});
    EXPECT_NE(said.find("worker 1 has " + (flag.empty() ? v.key : flag) + " "), std::string::npos)
        << said;
  }
  TrainOptions b = a;
  b.worker_timeout_seconds = 5;
  b.given.insert("--worker-timeout");
  EXPECT_NE(compare_worker_flags({train_flag_lines(a), train_flag_lines(b)})
                .find("worker 1 has --worker-timeout 5"),
            std::string::npos);
}

// A flag one worker gave and another did not is said as such, with what the other trains with:
// "worker 0 has --gpus 0" named a value no one gave (0 stands for the default's 2 devices).
TEST(WorkerFlags, AFlagAWorkerDidNotGiveIsSaidSoWithWhatItTrainsWith) {
  TrainOptions a, b;
  b.given = {"--gpus"};
  b.settings.devices.gpus = 1;
  std::string said = compare_worker_flags({train_flag_lines(a), train_flag_lines(b)});
  EXPECT_NE(said.find("worker 1 has --gpus 1 where worker 0 gave no --gpus (the default, 2)"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("--gpus 0"), std::string::npos) << said;
  // Either way round, and a value that stands for "none" in words.
  a.given = {"--max-steps"};
  a.settings.max_steps = 5;
  said = compare_worker_flags({train_flag_lines(a), train_flag_lines(TrainOptions{})});
  EXPECT_NE(said.find("worker 1 gave no --max-steps (the default, no limit) where worker 0 has "
                      "--max-steps 5"),
            std::string::npos)
      << said;
  // A flag given its default value trains as one left out: no difference.
  TrainOptions seed;
  seed.given = {"--seed"};
  EXPECT_EQ(compare_worker_flags({train_flag_lines(seed), train_flag_lines(TrainOptions{})}), "");
}

// The flag flag_for_setting names for a setting is one `train` has (and `gui`, but --workers:
// the window's workers are as many as mpirun started): beta1, beta2 and epsilon alone have none.
TEST(TrainFlags, EachSettingsFlagIsOneOfTrains) {
  CommandLine command_line;
  for (const char* command : {"train", "gui"}) {
    const CLI::App* app = command_line.app().get_subcommand(command);
    for (const std::string& key : core::setting_keys()) {
      const std::string flag = flag_for_setting(key);
      if (flag.empty()) {
        EXPECT_TRUE(key == "beta1" || key == "beta2" || key == "epsilon") << key;
        continue;
      }
      if (std::string(command) == "gui" && flag == "--workers") continue;
      EXPECT_NO_THROW(app->get_option(flag)) << command << " has no " << flag << " for " << key;
    }
  }
}

TEST(WorkerParts, MergeIntoAHistoryEntryAndATraceProcessPerWorker) {
  const nlohmann::json devices = {{{"name", "/gpu:0"}}, {{"name", "/gpu:1"}}};
  const std::vector<core::TraceEvent> events = {
      {1, core::Phase::kForward, 3, 10.5, 12.25, 0},
      {0, core::Phase::kUpdate, 9, 3600e6 + 0.25, 3600e6 + 1.0, 0}};  // an hour in
  const MergedRun merged = merge_worker_parts(
      {worker_part(FakeWorkers(0), devices, {}), worker_part(FakeWorkers(1), devices, events)});
  ASSERT_EQ(merged.workers.size(), 2u);
  EXPECT_EQ(merged.workers[1]["host"], "beta");
  EXPECT_EQ(merged.workers[1]["tf_config"]["task"]["index"], 1);
  EXPECT_FALSE(merged.workers[1].contains("trace"));
  ASSERT_EQ(merged.trace.size(), 2u);
  EXPECT_EQ(merged.trace[1].name, "worker 1 (pid 200 on beta)");
  EXPECT_EQ(merged.trace[1].lanes, (std::vector<std::string>{"/gpu:0", "/gpu:1"}));
  ASSERT_EQ(merged.trace[1].events.size(), 2u);
  EXPECT_EQ(merged.trace[1].events[0].phase, core::Phase::kForward);
  EXPECT_EQ(merged.trace[1].events[0].end_us, 12.25);
  const std::string trace = core::chrome_trace(merged.trace);
  const std::string process =
      R"x({"ph":"M","name":"process_name","pid":2,"args":{"name":"worker 1 (pid 200 on beta)"}})x";
  const std::string forward =
      R"({"ph":"X","pid":2,"tid":1,"name":"forward","ts":10.500,"dur":1.750)";
  EXPECT_NE(trace.find(process), std::string::npos) << trace;
  EXPECT_NE(trace.find(forward), std::string::npos) << trace;
  // To the microsecond an hour into a run, not to the stream's 6 digits.
  EXPECT_NE(trace.find(R"("ts":3600000000.250,"dur":0.750)"), std::string::npos) << trace;
}

}  // namespace
}  // namespace mirrorlab::app
