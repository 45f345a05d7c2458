// The GUI's data from the timing model, without a window: the machines the Compare panel offers
// (presets and this machine's fit), the predictions it draws beside measurements, the modelled
// all-reduces the All-reduce panel plays, and the training step's speed-up on a machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/nn/training_flops.h"
#include "core/strategy/step_kernels.h"
#include "gui/model/model_predictions.h"
#include "gui/model/modelled_all_reduce.h"
#include "gui/model/speedup_table.h"
#include "gui/model/topology_catalog.h"
#include "nlohmann/json.hpp"
#include "tests/support/temp_folder.h"
#include "timing/step_time.h"
#include "timing/topology_file.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::gui {
namespace {

// ---- the timing model's machines and predictions ----------------------------------------------

constexpr double kMiB = 1 << 20;

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(TopologyCatalog, ListsEveryPresetThenThisMachine) {
  testing::TempFolder folder("catalog");
  const TopologyCatalog catalog(timing::default_topology_folder(), folder / "fit.toml");
  std::set<std::string> presets;
  for (const auto& entry : std::filesystem::directory_iterator(timing::default_topology_folder())) {
    if (entry.path().extension() == ".toml") presets.insert(timing::read_topology(entry.path()).id);
  }
  ASSERT_GE(presets.size(), 5u);
  const auto& machines = catalog.machines();
  ASSERT_EQ(machines.size(), presets.size() + 1);
  for (std::size_t i = 0; i + 1 < machines.size(); ++i) {
    EXPECT_TRUE(presets.count(machines[i].id)) << machines[i].id;
    ASSERT_TRUE(machines[i].topology) << machines[i].id << ": " << machines[i].problem;
  }
  EXPECT_EQ(machines.back().id, "this-machine");
  EXPECT_EQ(&catalog.fitted(), &machines.back());
  EXPECT_NE(catalog.find("dgx-h100"), nullptr);
  EXPECT_EQ(catalog.find("dgx-h900"), nullptr);
  EXPECT_TRUE(catalog.presets_problem().empty());
}

// A topology file of the user's (--topology FILE, as compare takes one) is one more machine,
// before this-machine, by its path; one that cannot be read says why when it is chosen.
TEST(TopologyCatalog, AUsersTopologyFileIsAddedByItsPath) {
  testing::TempFolder folder("catalog");
  TopologyCatalog catalog(timing::default_topology_folder(), folder / "fit.toml");
  const std::size_t presets = catalog.machines().size() - 1;
  timing::Topology mine = timing::find_topology("pcie-2");
  mine.id = "my-cluster";
  const std::string file = (folder / "my-cluster.toml").string();
  write_file(file, timing::write_topology(mine));
  catalog.add_file(file);
  catalog.add_file(file);        // once
  catalog.add_file("dgx-h100");  // a preset's id: there already
  ASSERT_EQ(catalog.machines().size(), presets + 2);
  const ModelMachine* added = catalog.find(file);
  ASSERT_NE(added, nullptr);
  ASSERT_TRUE(added->topology) << added->problem;
  EXPECT_EQ(added->topology->id, "my-cluster");
  EXPECT_EQ(catalog.machines().back().id, "this-machine");
  EXPECT_EQ(check_model_choice(catalog, file, "ring", kMiB, 0), "");
  const std::string missing = (folder / "none.toml").string();
  catalog.add_file(missing);
  EXPECT_NE(check_model_choice(catalog, missing, "", 0, 0).find("--topology " + missing + ": "),
            std::string::npos);
}

TEST(TopologyCatalog, AMissingOrMalformedFitIsASentenceAndANewFitIsReadAgain) {
  testing::TempFolder folder("catalog");
  const std::filesystem::path fit = folder / "fit.toml";
  TopologyCatalog catalog(timing::default_topology_folder(), fit);
  // Missing: what to run, what it does, where it saves.
  EXPECT_FALSE(catalog.fitted().topology);
  EXPECT_EQ(catalog.fitted().problem, not_fitted_sentence(fit));
  EXPECT_NE(catalog.fitted().problem.find("mirrorlab compare --fit"), std::string::npos);
  EXPECT_NE(catalog.fitted().problem.find("measures this machine"), std::string::npos);
  EXPECT_NE(catalog.fitted().problem.find(fit.string()), std::string::npos);
  // Malformed: its file and line, and to fit again.
  timing::Topology fitted = timing::find_topology("laptop-4-logical");
  fitted.id = timing::kFittedTopologyId;
  const std::string good = timing::write_topology(fitted);
  std::string bad = good;
  const std::size_t nodes = bad.find("nodes = 1");
  ASSERT_NE(nodes, std::string::npos) << bad;
  bad.replace(nodes, 9, "nodes = \"two\"");
  const int line = 1 + static_cast<int>(std::count(bad.begin(), bad.begin() + nodes, '\n'));
  write_file(fit, bad);
  std::uint64_t before = catalog.version();
  catalog.refresh(10.0);
  EXPECT_FALSE(catalog.fitted().topology);
  EXPECT_NE(catalog.version(), before);
  EXPECT_NE(catalog.fitted().problem.find(fit.string() + ":" + std::to_string(line)),
            std::string::npos)
      << catalog.fitted().problem;
  EXPECT_NE(catalog.fitted().problem.find("mirrorlab compare --fit"), std::string::npos);
  // Empty, and not TOML at all: the same.
  for (const std::string text : {"", "\x01\x02[[[ nonsense"}) {
    write_file(fit, text);
    const TopologyCatalog again(timing::default_topology_folder(), fit);
    EXPECT_FALSE(again.fitted().topology) << text;
    EXPECT_NE(again.fitted().problem.find("cannot be used"), std::string::npos) << text;
  }
  // A fit saved while the window is open is read at the next look, a second after the last.
  write_file(fit, good);
  before = catalog.version();
  catalog.refresh(10.5);
  EXPECT_FALSE(catalog.fitted().topology);
  EXPECT_EQ(catalog.version(), before);
  catalog.refresh(11.5);
  ASSERT_TRUE(catalog.fitted().topology) << catalog.fitted().problem;
  EXPECT_EQ(catalog.fitted().topology->ranks(), 4);
  EXPECT_TRUE(catalog.fitted().problem.empty());
  EXPECT_NE(catalog.version(), before);
  // Unchanged: not read again.
  before = catalog.version();
  catalog.refresh(13.0);
  EXPECT_EQ(catalog.version(), before);
  // Too many GPUs to draw (one-shot's moves grow as their square): a sentence, not a frozen
  // window.
  timing::Topology huge = fitted;
  huge.nodes = 1024;
  huge.gpus_per_node = 64;
  huge.network = {1e-6, 50e9};
  write_file(fit, timing::write_topology(huge));
  const TopologyCatalog too_big(timing::default_topology_folder(), fit);
  EXPECT_FALSE(too_big.fitted().topology);
  EXPECT_NE(too_big.fitted().problem.find("65536 GPUs; the window shows at most 256"),
            std::string::npos)
      << too_big.fitted().problem;
  // No place to look (neither HOME nor XDG_CONFIG_HOME): still a sentence.
  const TopologyCatalog nowhere(timing::default_topology_folder(), "");
  EXPECT_NE(nowhere.fitted().problem.find("--output"), std::string::npos);
}

TEST(ModelPredictions, EachMachinesTableIsWhatEstimateAndNcclsModelGive) {
  const TopologyCatalog catalog(timing::default_topology_folder(), "");
  const std::vector<double> sizes = machine_view_sizes();
  ASSERT_EQ(sizes.size(), 10u);  // 4 KiB to 1 GiB
  EXPECT_EQ(sizes.front(), 4096);
  EXPECT_EQ(sizes.back(), 1024 * kMiB);
  int with_nccl = 0;
  for (const ModelMachine& m : catalog.machines()) {
    if (!m.topology) continue;
    const timing::Topology& t = *m.topology;
    const std::vector<SizePrediction> rows = predict_on_machine(t, sizes);
    ASSERT_EQ(rows.size(), sizes.size());
    for (const SizePrediction& row : rows) {
      std::size_t k = 0;
      for (const vgpu::AllReduceAlgorithm& a : vgpu::all_reduce_algorithms()) {
        if (a.schedule == nullptr) continue;
        if (!timing::cannot_run(a.schedule(t.ranks(), row.bytes, 0), t).empty()) continue;
        ASSERT_LT(k, row.algorithms.size());
        EXPECT_EQ(row.algorithms[k].algorithm, a.name);
        EXPECT_EQ(row.algorithms[k].predicted,
                  timing::estimate(a.schedule(t.ranks(), row.bytes, 0), t).seconds)
            << t.id << " " << a.name << " " << row.bytes;
        ++k;
      }
      EXPECT_EQ(k, row.algorithms.size()) << t.id;
      EXPECT_EQ(row.nccl.has_value(), t.has_nccl) << t.id;
      if (row.nccl) {
        const timing::NcclCost c = timing::nccl_choice(t.nccl, t.ranks(), t.nodes, row.bytes);
        EXPECT_EQ(row.nccl->time_us, c.time_us);
        EXPECT_EQ(nccl_pick_text(*row.nccl),
                  std::string(to_string(c.algorithm)) + " " + to_string(c.protocol));
      }
    }
    with_nccl += t.has_nccl;
  }
  EXPECT_GE(with_nccl, 4);
  // The one-shot's kernels reach every GPU's memory: not on PCIe without peer access, not across
  // nodes; each left out with its reason, the others priced.
  const auto names = [](const std::vector<SizePrediction>& rows) {
    std::vector<std::string> out;
    for (const timing::Prediction& p : rows.front().algorithms) out.push_back(p.algorithm);
    return out;
  };
  const std::vector<std::string> without = {std::string(vgpu::kReduceToOneName),
                                            std::string(vgpu::kRingName)};
  for (const char* id : {"pcie-2", "dgx-h100-2-nodes"}) {
    const timing::Topology& t = *catalog.find(id)->topology;
    EXPECT_EQ(names(predict_on_machine(t, sizes)), without) << id;
    const std::vector<std::string> lines = cannot_run_on_machine(t);
    ASSERT_EQ(lines.size(), 1u) << id;
    EXPECT_EQ(lines[0].rfind(std::string(vgpu::kOneShotName) + " cannot run", 0), 0u) << lines[0];
  }
  EXPECT_NE(cannot_run_on_machine(*catalog.find("pcie-2")->topology)[0].find("no peer access"),
            std::string::npos);
  EXPECT_NE(cannot_run_on_machine(*catalog.find("dgx-h100-2-nodes")->topology)[0].find(
                "another node's GPU"),
            std::string::npos);
  for (const char* id : {"dgx-h100", "nvlink-pairs-4", "laptop-4-logical"}) {
    const timing::Topology& t = *catalog.find(id)->topology;
    EXPECT_EQ(names(predict_on_machine(t, sizes)).size(), 3u) << id;
    EXPECT_TRUE(cannot_run_on_machine(t).empty()) << id;
  }
  // Worked by hand in test_timing: 1 KiB picks Ring LL on dgx-h100, 1 GiB NVLS Simple.
  const std::vector<SizePrediction> dgx =
      predict_on_machine(*catalog.find("dgx-h100")->topology, {1024, 1024 * kMiB});
  EXPECT_EQ(nccl_pick_text(*dgx[0].nccl), "Ring LL");
  EXPECT_EQ(nccl_pick_text(*dgx[1].nccl), "NVLS Simple");
}

TEST(ModelPredictions, MeasurementsAreSetBesideTheFitsPredictionOrASentence) {
  core::AlgorithmComparison measured;
  measured.gradient_bytes = 1 << 20;
  measured.timings = {{std::string(vgpu::kReduceToOneName), true, "", 0.01, 0.002, 6},
                      {std::string(vgpu::kNcclName), false, "cannot run", 0, 0, 0}};
  measured.sweep.push_back({std::string(vgpu::kRingName), std::size_t{4} << 20, 1 << 20, 0.003});
  ModelMachine fit{"this-machine", timing::find_topology("laptop-4-logical"), ""};
  const MeasuredPredictions p = predict_measured(measured, 2, fit);
  EXPECT_TRUE(p.problem.empty()) << p.problem;
  ASSERT_EQ(p.training.size(), 1u);  // NCCL, not run, is not predicted from the fit
  EXPECT_EQ(p.training[0].measured, 0.002);
  EXPECT_EQ(p.training[0].predicted,
            timing::estimate(timing::reduce_to_one_schedule(2, 1 << 20), *fit.topology).seconds);
  ASSERT_EQ(p.sweep.size(), 1u);
  EXPECT_EQ(p.sweep[0].predicted,
            timing::estimate(timing::ring_schedule(2, 4 * kMiB), *fit.topology).seconds);
  EXPECT_EQ(find_prediction(p.sweep, std::string(vgpu::kRingName), 4 * kMiB), &p.sweep[0]);
  EXPECT_EQ(find_prediction(p.sweep, std::string(vgpu::kRingName), kMiB), nullptr);
  // More devices than the fit had: say so, and how to fit again.
  const MeasuredPredictions more = predict_measured(measured, 8, fit);
  EXPECT_TRUE(more.training.empty());
  EXPECT_NE(more.problem.find("--gpus 8"), std::string::npos) << more.problem;
  // No fit: the catalog's sentence.
  const ModelMachine none{"this-machine", std::nullopt, not_fitted_sentence("/x/fit.toml")};
  EXPECT_EQ(predict_measured(measured, 2, none).problem, none.problem);
}

TEST(ModelledAllReduce, NcclsAlgorithmsWhereNcclRunsAndNvlsOnlyWithNvSwitch) {
  const auto ids = [](const timing::Topology& t) {
    std::vector<std::string> out;
    for (const ModelledAlgorithm& a : modelled_algorithms(t)) out.push_back(a.id);
    return out;
  };
  const std::vector<std::string> mirrorlab = {std::string(vgpu::kReduceToOneName),
                                              std::string(vgpu::kRingName),
                                              std::string(vgpu::kOneShotName)};
  std::vector<std::string> dgx = {"nccl-ring", "nccl-tree", "nccl-nvls"};
  dgx.insert(dgx.end(), mirrorlab.begin(), mirrorlab.end());
  EXPECT_EQ(ids(timing::find_topology("dgx-h100")), dgx);
  // No NVLS without NVSwitch or across nodes; no one-shot without peer access or across nodes.
  const std::vector<std::string> pcie = {
      "nccl-ring", "nccl-tree", std::string(vgpu::kReduceToOneName), std::string(vgpu::kRingName)};
  EXPECT_EQ(ids(timing::find_topology("pcie-2")), pcie);
  EXPECT_EQ(ids(timing::find_topology("dgx-h100-2-nodes")), pcie);
  EXPECT_EQ(ids(timing::find_topology("laptop-4-logical")), mirrorlab);  // no NCCL there
  std::string why;
  EXPECT_FALSE(find_modelled_algorithm(timing::find_topology("pcie-2"),
                                       std::string(vgpu::kOneShotName), &why));
  EXPECT_NE(why.find("no peer access"), std::string::npos) << why;
  EXPECT_NE(why.find("choose nccl-ring, nccl-tree, reduce-to-one, ring"), std::string::npos) << why;
  EXPECT_FALSE(find_modelled_algorithm(timing::find_topology("pcie-2"), "nccl-nvls", &why));
  EXPECT_NE(why.find("NVSwitch"), std::string::npos) << why;
  EXPECT_FALSE(
      find_modelled_algorithm(timing::find_topology("laptop-4-logical"), "nccl-ring", &why));
  EXPECT_NE(why.find("one GPU per rank"), std::string::npos) << why;
}

TEST(ModelledAllReduce, ItsStepsAreTheSchedulesEstimateAndNcclsOwnModel) {
  const timing::Topology dgx = timing::find_topology("dgx-h100");
  const double bytes = 64 * kMiB;
  const ModelledAllReduce tree =
      model_all_reduce(dgx, *find_modelled_algorithm(dgx, "nccl-tree", nullptr), bytes);
  const timing::Estimate expected = timing::estimate(timing::tree_schedule(8, 8, bytes), dgx);
  ASSERT_EQ(tree.estimate.steps.size(), 14u);  // a chain of 8: 7 up, 7 down
  EXPECT_EQ(tree.estimate.seconds, expected.seconds);
  for (std::size_t k = 0; k < expected.steps.size(); ++k) {
    EXPECT_EQ(tree.estimate.steps[k].seconds, expected.steps[k].seconds) << k;
    EXPECT_EQ(tree.estimate.steps[k].bottleneck, expected.steps[k].bottleneck) << k;
  }
  // NCCL's own model: the Tree at its fastest protocol, and NCCL's choice among all.
  ASSERT_TRUE(tree.nccl_own && tree.nccl_picks);
  EXPECT_EQ(tree.nccl_own->algorithm, timing::NcclAlgorithm::kTree);
  for (const timing::NcclCost& c : timing::nccl_costs(dgx.nccl, 8, 1, bytes)) {
    if (c.algorithm == timing::NcclAlgorithm::kTree) {
      EXPECT_LE(tree.nccl_own->time_us, c.time_us);
    }
  }
  EXPECT_EQ(tree.nccl_picks->time_us, timing::nccl_choice(dgx.nccl, 8, 1, bytes).time_us);
  // mirrorlab's reduce-to-one: the table's schedule, and no NCCL model.
  const ModelledAllReduce r2o = model_all_reduce(
      dgx, *find_modelled_algorithm(dgx, std::string(vgpu::kReduceToOneName), nullptr), bytes);
  EXPECT_EQ(r2o.estimate.seconds,
            timing::estimate(timing::reduce_to_one_schedule(8, bytes), dgx).seconds);
  EXPECT_FALSE(r2o.nccl_own);
}

TEST(ModelledAllReduce, TheCommandLinesChoiceIsCheckedWithWhatToGiveInstead) {
  testing::TempFolder folder("catalog");
  const TopologyCatalog machines(timing::default_topology_folder(), folder / "fit.toml");
  EXPECT_EQ(check_model_choice(machines, "dgx-h100", "", 0, 0), "");
  EXPECT_EQ(check_model_choice(machines, "dgx-h100", "nccl-tree", 64 * kMiB, 14), "");
  const std::string unknown = check_model_choice(machines, "dgx-h900", "", 0, 0);
  EXPECT_NE(unknown.find("--topology dgx-h900: no such machine: choose dgx-h100-2-nodes, dgx-h100"),
            std::string::npos)
      << unknown;
  EXPECT_NE(check_model_choice(machines, "this-machine", "", 0, 0).find("mirrorlab compare --fit"),
            std::string::npos);
  EXPECT_NE(check_model_choice(machines, "pcie-2", "nccl-nvls", kMiB, 0)
                .find("--model-allreduce nccl-nvls: nccl-nvls cannot be played on pcie-2"),
            std::string::npos);
  EXPECT_NE(check_model_choice(machines, "dgx-h100", "nccl-tree", kMiB, 15)
                .find("--model-step 15: NCCL Tree on dgx-h100 has 14 steps: give 0"),
            std::string::npos);
  EXPECT_NE(check_model_choice(machines, "dgx-h100", "", kMiB, 3).find("--model-step needs"),
            std::string::npos);
}

// ---- the training step on a machine (speedup_table.h) --------------------------------------

RunModel cnn_at(std::size_t batch) {
  RunModel run;
  run.model = core::ModelKind::kCnn;
  run.batch_per_replica = batch;
  return run;
}

// The rows timing::predict_steps() gives on `t` for `run` with one replica's compute `compute`,
// all-reducing with TensorFlow's choice there.
std::vector<timing::StepTime> expected_steps(const timing::Topology& t, const RunModel& run,
                                             double compute, double overlapped = 0) {
  const core::TrainingFlops f = core::training_flops(run.model, run.optimizer);
  return timing::predict_steps(
      t, t.has_nccl ? nullptr : vgpu::find_all_reduce(vgpu::kRingName)->schedule,
      static_cast<double>(f.params * sizeof(float)),
      {compute,
       timing::compute_engines(t),
       static_cast<double>(run.batch_per_replica),
       overlapped,
       {}},
      t.ranks());
}

TEST(SpeedupTable, AModelOfTheUsersIsNotPredictedAsAnotherOne) {
  const TopologyCatalog catalog(timing::default_topology_folder(), "");
  using K = core::LayerSpec::Kind;
  RunModel run = cnn_at(64);
  run.layers = {{K::kFlatten, 0, "flatten"},
                {K::kDense, 128, "dense"},
                {K::kReLU, 0, "re_lu"},
                {K::kDense, 10, "dense_1"}};
  EXPECT_EQ(run.params(), 784u * 128 + 128 + 128 * 10 + 10);
  const SpeedupTable table =
      predict_speedup(*catalog.find("dgx-h100")->topology, false, run, std::nullopt);
  EXPECT_TRUE(table.rows.empty());
  EXPECT_NE(table.problem.find("this run's model (Flatten Dense(128) ReLU Dense(10)) is neither"),
            std::string::npos)
      << table.problem;
  EXPECT_NE(table.problem.find("its 398 KiB of gradients"), std::string::npos) << table.problem;
  // The CNN's own layers, given as a user's, count as the CNN does.
  RunModel cnn = cnn_at(64);
  cnn.layers = core::layer_specs_of(core::ModelKind::kCnn);
  EXPECT_EQ(cnn.params(), cnn_at(64).params());
}

void expect_same_rows(const std::vector<timing::StepTime>& got,
                      const std::vector<timing::StepTime>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].devices, want[i].devices) << where << " row " << i;
    EXPECT_EQ(got[i].replicas_per_engine, want[i].replicas_per_engine) << where << " row " << i;
    EXPECT_EQ(got[i].compute, want[i].compute) << where << " row " << i;
    EXPECT_EQ(got[i].all_reduce, want[i].all_reduce) << where << " row " << i;
    EXPECT_EQ(got[i].all_reduce_how, want[i].all_reduce_how) << where << " row " << i;
    EXPECT_EQ(got[i].seconds, want[i].seconds) << where << " row " << i;
    EXPECT_EQ(got[i].images_per_second, want[i].images_per_second) << where << " row " << i;
    EXPECT_EQ(got[i].speedup, want[i].speedup) << where << " row " << i;
    EXPECT_EQ(got[i].added, want[i].added) << where << " row " << i;
  }
}

TEST(SpeedupTable, OnEachPresetItsRowsAreWhatPredictStepsGivesForTheRunsModel) {
  const TopologyCatalog catalog(timing::default_topology_folder(), "");
  int presets = 0;
  for (const ModelMachine& m : catalog.machines()) {
    if (!m.topology || &m == &catalog.fitted()) continue;
    const timing::Topology& t = *m.topology;
    for (const RunModel& run : {cnn_at(64), cnn_at(4096)}) {
      const SpeedupTable table = predict_speedup(t, false, run, std::nullopt);
      ASSERT_EQ(table.problem, "") << t.id;
      const core::ModelledCompute compute =
          core::modelled_compute(run.model, run.optimizer, run.batch_per_replica, t);
      EXPECT_TRUE(compute.from_kernels) << t.id;
      EXPECT_EQ(table.compute, compute.seconds) << t.id;
      ASSERT_TRUE(table.compute_parts.has_value()) << t.id;
      EXPECT_EQ(table.compute_parts->launches, compute.parts.launches) << t.id;
      expect_same_rows(table.rows, expected_steps(t, run, compute.seconds, compute.overlapped),
                       t.id);
      const timing::StopPoint stop = timing::where_adding_stops(table.rows);
      EXPECT_EQ(table.stop.devices, stop.devices) << t.id;
      EXPECT_EQ(table.stop.next, stop.next) << t.id;
      // TensorFlow's choice, said as the command line says it.
      EXPECT_EQ(table.algorithm, t.has_nccl ? "nccl" : "ring") << t.id;
      EXPECT_EQ(table.all_reduce, timing::all_reduce_sentence(table.algorithm, true, table.nccl));
      EXPECT_EQ(table.compute_source, compute.source);
      // Its parts on screen, and where the prices come from below.
      EXPECT_NE(table.summary.find(" launches "), std::string::npos) << table.summary;
      EXPECT_EQ(table.compute_numbers, t.compute.source);
      EXPECT_EQ(table.verdict.verdict, timing::step_verdict(table.rows, "x").verdict) << t.id;
    }
    ++presets;
  }
  EXPECT_GE(presets, 5);
  // Lesson 8's cases: on 8 H100s a batch of 64 pays on all 8 (a step of launches is long beside
  // NCCL on NVSwitch); on 2 H100s through PCIe it stops paying after one card (the all-reduce is
  // why), and one of 4096 pays on both; 4 logical GPUs of one card take turns on it.
  const SpeedupTable dgx =
      predict_speedup(*catalog.find("dgx-h100")->topology, false, cnn_at(64), std::nullopt);
  EXPECT_EQ(dgx.stop.devices, 8);
  EXPECT_NE(dgx.verdict.why.find("is 19% of each device's compute"), std::string::npos)
      << dgx.verdict.why;
  const SpeedupTable small =
      predict_speedup(*catalog.find("pcie-2")->topology, false, cnn_at(64), std::nullopt);
  EXPECT_EQ(small.stop.devices, 1);
  EXPECT_NE(small.verdict.why.find("a larger batch/replica (Controls)"), std::string::npos)
      << small.verdict.why;
  EXPECT_EQ(predict_speedup(*catalog.find("pcie-2")->topology, false, cnn_at(4096), std::nullopt)
                .stop.devices,
            2);
  const SpeedupTable laptop =
      predict_speedup(*catalog.find("laptop-4-logical")->topology, false, cnn_at(64), std::nullopt);
  EXPECT_EQ(laptop.rows.back().replicas_per_engine, 4);
  EXPECT_EQ(laptop.stop.devices, 1);
}

TEST(SpeedupTable, NoFlopsOrNoStepsYetIsASentenceNotATable) {
  timing::Topology no_flops = timing::find_topology("dgx-h100");
  no_flops.flops = 0;
  no_flops.compute = {};
  const SpeedupTable none = predict_speedup(no_flops, false, cnn_at(64), std::nullopt);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_NE(none.problem.find("dgx-h100 gives neither a [compute] table nor a FLOP/s"),
            std::string::npos)
      << none.problem;
  // A machine with a FLOP/s and no [compute] (a user's file from before): its FLOPs at the peak,
  // said to be a lower bound.
  timing::Topology peak_only = timing::find_topology("dgx-h100");
  peak_only.compute = {};
  const SpeedupTable peak = predict_speedup(peak_only, false, cnn_at(64), std::nullopt);
  EXPECT_FALSE(peak.compute_parts.has_value());
  EXPECT_NE(peak.compute_source.find("so this is a lower bound"), std::string::npos);
  // This machine before the run has taken steps: say to take some.
  timing::Topology here = timing::find_topology("laptop-4-logical");
  here.id = "this-machine";
  here.flops = 0;
  const SpeedupTable waiting = predict_speedup(here, true, cnn_at(64), std::nullopt);
  EXPECT_TRUE(waiting.rows.empty());
  EXPECT_NE(waiting.problem.find("it needs a few steps"), std::string::npos) << waiting.problem;
  // Once measured, the run's compute is the table's, over the turns its replicas took.
  RunCompute live;
  live.phases.seconds = 0.012;
  live.phases.steps = 5;
  live.devices = 2;
  live.turns = 2;
  const SpeedupTable measured = predict_speedup(here, true, cnn_at(64), live);
  ASSERT_EQ(measured.problem, "");
  EXPECT_EQ(measured.compute, 0.006);
  expect_same_rows(measured.rows, expected_steps(here, cnn_at(64), 0.006), "this-machine");
  EXPECT_NE(measured.compute_source.find("measured in this run on 2 devices"), std::string::npos)
      << measured.compute_source;
  // No batch at all: a sentence too.
  EXPECT_NE(predict_speedup(here, false, cnn_at(0), std::nullopt).problem, "");
}

// A snapshot of `steps` global steps on 2 devices, a global batch of 128 (the last `short_steps`
// of them shorter), each replica's forward, backward and update taking 1 + step ms each.
core::SessionSnapshot run_of(int steps, int short_steps) {
  core::SessionSnapshot run;
  run.global_batch = 128;
  run.devices.resize(2);
  vgpu::TimePoint now{};
  for (int s = 0; s < steps; ++s) {
    const bool is_short = s >= steps - short_steps;
    run.steps.push_back({s + 1, 1, 0, 0, is_short ? 100 : 128, 0.01});
    for (core::Phase p : {core::Phase::kForward, core::Phase::kBackward, core::Phase::kUpdate}) {
      for (int d = 0; d < 2; ++d) {
        const vgpu::TimePoint end = now + std::chrono::milliseconds(1 + s);
        run.events.push_back({d, p, s, now, end, 0});
        now = end;
      }
    }
  }
  return run;
}

TEST(SpeedupTable, TheRunsComputeIsTheMedianOfItsRecentFullStepsAfterTheFirst) {
  const timing::Topology laptop = timing::find_topology("laptop-4-logical");  // one engine
  EXPECT_FALSE(run_compute(run_of(3, 0), laptop));  // steps 2 and 3 only: too few
  // Steps 2..6 (events 1..5) full, 7 short: 3 x (1 + s) ms for s = 1..5, median s = 3: 12 ms.
  const core::SessionSnapshot run = run_of(7, 1);
  EXPECT_EQ(compute_steps_of(run), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  const std::optional<RunCompute> c = run_compute(run, laptop);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->phases.steps, 5);
  EXPECT_NEAR(c->phases.seconds, 0.012, 1e-9);
  EXPECT_EQ(c->devices, 2);
  EXPECT_EQ(c->turns, 2);  // both replicas took turns on the one card
  EXPECT_NEAR(c->seconds(), 0.006, 1e-9);
  // The last kComputeSteps only.
  EXPECT_EQ(compute_steps_of(run_of(40, 0)).size(), static_cast<std::size_t>(kComputeSteps));
  EXPECT_EQ(compute_steps_of(run_of(40, 0)).back(), 39);
}

}  // namespace
}  // namespace mirrorlab::gui
