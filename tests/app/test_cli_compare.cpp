// `mirrorlab compare` as a user runs it: a fit on CPU virtual GPUs saved and checked, a preset
// predicted, the training step's table (on a preset, compute from FLOPs and nothing measured; on
// the devices at hand, compute measured briefly), and every bad input refused with exit status 2
// and a sentence, measuring nothing. Tiny sizes: this checks the command, not the machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/session/text/console_text.h"
#include "tests/support/command_output.h"
#include "tests/support/temp_folder.h"

namespace {

using Result = mirrorlab::testing::CommandOutput;

// With the fitted file kept in `folder`, whatever HOME holds.
Result compare(const std::filesystem::path& folder, const std::string& args) {
  return mirrorlab::testing::run_command("MIRRORLAB_FIT_FILE=" + (folder / "fit.toml").string() +
                                         " " + MIRRORLAB_BINARY_DIR + "/app/mirrorlab compare " +
                                         args);
}

// A fitted topology written by hand (what --fit would save), so that the all-reduce's prediction
// is known: one memory of 10 GB/s at every size, 5 us a step, 2 cores.
void write_fitted(const std::filesystem::path& file, const std::string& extra = "") {
  std::ofstream(file) << "id = \"this-machine\"\ntitle = \"2 CPU virtual GPUs (by hand)\"\n"
                         "source = \"a test\"\nnodes = 1\ngpus_per_node = 2\n"
                         "fabric = \"shared-memory\"\nstep_latency_us = 5\n"
                      << extra << "\n[memory]\nbandwidth_gbs = 10\nengines = 2\n";
}

// The output with its wrapped comment lines joined ("...\n# more" -> "... more"), to find a
// sentence wherever the lines broke.
std::string flat(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text.compare(at, 3, "\n# ") == 0) {
      out += ' ';
      at += 2;
    } else {
      out += text[at];
    }
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(CliCompare, FitsSavesAndChecksOnCpuVirtualGpus) {
  mirrorlab::testing::TempFolder folder("compare");
  // Small sizes only, few rounds: this checks the command, not the model (docs/ has that).
  const std::string sizes = "--gpus 2 -b 64K -e 256K -f 4 -n 2 -w 1";
  const std::string fit_json = (folder.path() / "fit.json").string();
  const Result fit = compare(folder.path(), "--fit " + sizes + " --rounds 2 --record " + fit_json);
  ASSERT_EQ(fit.status, 0) << fit.output;
  // Round by round: the memory, the fit's small all-reduces and the checked sizes, so that each
  // keeps its best round from the same minutes as the others.
  const std::size_t checked_1 =
      fit.output.find("one-shot on 2 devices, 64 KiB to 256 KiB (round 1 of 2)");
  const std::size_t memory_2 =
      fit.output.find("the memory's bandwidth over 512 KiB to 512 KiB (round 2 of 2)");
  const std::size_t small_2 = fit.output.find("ring on 2 devices, 4 KiB to 64 KiB (round 2 of 2)");
  ASSERT_NE(checked_1, std::string::npos) << fit.output;
  ASSERT_NE(memory_2, std::string::npos) << fit.output;
  ASSERT_NE(small_2, std::string::npos) << fit.output;
  EXPECT_LT(checked_1, memory_2) << fit.output;
  EXPECT_LT(memory_2, small_2) << fit.output;
  EXPECT_LT(small_2, fit.output.find("the latencies fitted:")) << fit.output;
  EXPECT_NE(fit.output.find("the latencies fitted:"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("Saved to " + (folder.path() / "fit.toml").string()), std::string::npos)
      << fit.output;
  // This machine's own file (MIRRORLAB_FIT_FILE here): what compare checks and this-machine names.
  EXPECT_NE(flat(fit.output).find("'mirrorlab compare' checks it, '--topology this-machine'"),
            std::string::npos)
      << fit.output;
  std::ifstream in(folder.path() / "fit.toml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("id = \"this-machine\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("fabric = \"shared-memory\""), std::string::npos) << text.str();
  // Each algorithm with a schedule on 2 devices, at the two sizes, predicted beside measured.
  for (const char* table :
       {"# reduce-to-one on 2 devices", "# ring on 2 devices", "# one-shot on 2 devices"}) {
    EXPECT_NE(fit.output.find(table), std::string::npos) << table << "\n" << fit.output;
  }
  EXPECT_NE(fit.output.find("of 6 ('!' marks the others)"), std::string::npos) << fit.output;

  // What the fit measured, fitted again from its recording: the same parameters, bit for bit.
  EXPECT_NE(flat(fit.output).find("What was measured is recorded in " + fit_json),
            std::string::npos)
      << fit.output;
  // A fit's recording is fitted again: a model to check it against is refused.
  const Result beside = compare(folder.path(), "--replay " + fit_json + " --fitted x.toml");
  EXPECT_EQ(beside.status, 2) << beside.output;
  EXPECT_NE(beside.output.find("recorded a fit, which is fitted again"), std::string::npos)
      << beside.output;
  const Result refit = compare(folder.path(), "--replay " + fit_json + " --output " +
                                                  (folder.path() / "refit.toml").string());
  ASSERT_EQ(refit.status, 0) << refit.output;
  // Another file is named where it is used: compare and this-machine read their own.
  const std::string refit_toml = (folder.path() / "refit.toml").string();
  EXPECT_NE(flat(refit.output)
                .find("'mirrorlab compare --fitted " + refit_toml + "' checks it, '--topology " +
                      refit_toml + "' predicts with it"),
            std::string::npos)
      << refit.output;
  EXPECT_EQ(refit.output.find("# measuring"), std::string::npos) << refit.output;
  EXPECT_NE(refit.output.find("of 6 ('!' marks the others)"), std::string::npos) << refit.output;
  const auto parameters = [](const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.rfind("title", 0) != 0 && line.rfind("source", 0) != 0) kept += line + "\n";
    }
    return kept;
  };
  EXPECT_GT(parameters(folder.path() / "refit.toml").size(), 200u);
  EXPECT_EQ(parameters(folder.path() / "refit.toml"), parameters(folder.path() / "fit.toml"));

  // Without --fit the saved file is what is checked; --topology this-machine predicts with it.
  const std::string check_json = (folder.path() / "check.json").string();
  const Result check = compare(folder.path(), sizes + " --rounds 1 --record " + check_json);
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_EQ(check.output.find("Fitting"), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("of 6 ('!' marks the others)"), std::string::npos) << check.output;
  // And says how the memory compares with the fit's, before and after.
  EXPECT_NE(check.output.find("# The memory at the check against the fit, over 512 KiB"),
            std::string::npos)
      << check.output;
  EXPECT_NE(check.output.find("before the check"), std::string::npos) << check.output;
  // The check again from its recording: the same six rows, measuring nothing.
  const Result recheck = compare(folder.path(), "--replay " + check_json);
  ASSERT_EQ(recheck.status, 0) << recheck.output;
  EXPECT_EQ(recheck.output.find("# measuring"), std::string::npos) << recheck.output;
  EXPECT_NE(recheck.output.find("of 6 ('!' marks the others)"), std::string::npos)
      << recheck.output;
  EXPECT_NE(recheck.output.find("# The memory at the check against the fit"), std::string::npos)
      << recheck.output;
  const Result predicted = compare(folder.path(), "--topology this-machine -b 1M -e 1M");
  EXPECT_EQ(predicted.status, 0) << predicted.output;
  EXPECT_NE(predicted.output.find("NCCL cannot run on this-machine"), std::string::npos)
      << predicted.output;
  // A fit of 2 devices cannot be checked on 4.
  const Result more = compare(folder.path(), "--gpus 4 -b 64K -e 64K");
  EXPECT_EQ(more.status, 2) << more.output;
  EXPECT_NE(more.output.find("fewer than --gpus 4"), std::string::npos) << more.output;
}

TEST(CliCompare, PredictsNcclAndTheFallbackOnAPreset) {
  mirrorlab::testing::TempFolder folder("compare");
  const Result r = compare(folder.path(), "--topology dgx-h100 -b 1K -e 1G -f 1024");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Where its numbers come from"), std::string::npos) << r.output;
  // NCCL's model picks Ring LL for 1 KiB and NVLS Simple for 1 GiB on NVSwitch (as test_timing
  // pins), and the table says so.
  EXPECT_NE(r.output.find("Ring LL"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NVLS Simple"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(folder.path() / "fit.toml"));
  EXPECT_EQ(r.output.find("cannot run"), std::string::npos) << r.output;
  // Two PCIe cards without peer access: the one-shot's column says it cannot run, and why.
  const Result pcie = compare(folder.path(), "--topology pcie-2 -b 1M -e 4M");
  ASSERT_EQ(pcie.status, 0) << pcie.output;
  EXPECT_NE(pcie.output.find("4 MiB"), std::string::npos) << pcie.output;
  const std::string row = pcie.output.substr(pcie.output.find("4 MiB"));
  EXPECT_NE(row.substr(0, row.find('\n')).find("cannot run"), std::string::npos) << row;
  EXPECT_NE(pcie.output.find("# one-shot cannot run on pcie-2"), std::string::npos) << pcie.output;
}

// The training step's table (app/compare/compare_step.h).
TEST(CliCompareStep, PricesTheCnnsKernelsOnAPresetAndPredictsEachDeviceCount) {
  mirrorlab::testing::TempFolder folder("compare-step");
  const Result r = compare(folder.path(), "--topology dgx-h100 -b 1M -e 1M");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string text = flat(r.output);
  EXPECT_EQ(r.output.find("# measuring"), std::string::npos) << r.output;
  EXPECT_NE(text.find("One training step of the cnn (693,962 parameters"), std::string::npos)
      << r.output;
  // Train's defaults: 64 examples per replica, Adam: 28 launches (timing/compute_model.h; the
  // fake card counts the same, test_step_gpu_work), (1,814,368 + 3,206,922) FLOP x 64 + 12 x
  // 693,962 of update + the kernels' elementwise work, priced on the preset's [compute], its
  // sources printed.
  EXPECT_NE(text.find("at 64 examples per replica with adam"), std::string::npos) << r.output;
  EXPECT_NE(text.find("priced on a GPU of dgx-h100: 28 launches x 2.5 us = 70.0 us"),
            std::string::npos)
      << r.output;
  EXPECT_NE(text.find("the host's 18.4 us a step; in all"), std::string::npos) << r.output;
  EXPECT_NE(text.find("Its compute, kernel by kernel ([compute]):"), std::string::npos) << r.output;
  // auto is NCCL there, its pick in the last column; a row for each of the 8 GPUs.
  EXPECT_NE(text.find("(auto: TensorFlow 2.21's choice with a GPU per replica)"), std::string::npos)
      << r.output;
  EXPECT_NE(text.find("NCCL picks"), std::string::npos) << r.output;
  for (int n = 1; n <= 8; ++n) {
    EXPECT_NE(text.find("\n      " + std::to_string(n) + "       1 "), std::string::npos)
        << n << " devices\n"
        << r.output;
  }
  EXPECT_NE(text.find("pays for itself while it adds at least 50%"), std::string::npos) << r.output;
}

TEST(CliCompareStep, PastOneNodeCountsWholeNodes) {
  mirrorlab::testing::TempFolder folder("compare-step");
  const Result r = compare(folder.path(), "--topology dgx-h100-2-nodes -b 1M -e 1M");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("\n      8       1 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n     16       1 "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\n      9       1 "), std::string::npos) << r.output;
}

TEST(CliCompareStep, LogicalGpusOfOneCardTakeTurnsOnIt) {
  mirrorlab::testing::TempFolder folder("compare-step");
  const Result r = compare(folder.path(),
                           "--topology laptop-4-logical -b 1M -e 1M --model mlp "
                           "--batch-per-replica 256 --optimizer sgd");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string text = flat(r.output);
  EXPECT_NE(text.find("One training step of the mlp (235,146 parameters"), std::string::npos)
      << r.output;
  EXPECT_NE(text.find("at 256 examples per replica with sgd"), std::string::npos) << r.output;
  EXPECT_NE(text.find("(auto: TensorFlow 2.21's choice where NCCL cannot run)"), std::string::npos)
      << r.output;
  // One card: on 4 logical GPUs it computes the 4 replicas one after another.
  EXPECT_NE(text.find("share one card"), std::string::npos) << r.output;
  EXPECT_NE(text.find("\n      4       4 "), std::string::npos) << r.output;
}

TEST(CliCompareStep, MeasuresTheComputeHereAndAddsThePredictedAllReduce) {
  mirrorlab::testing::TempFolder folder("compare-step");
  write_fitted(folder.path() / "fit.toml");
  const std::string step = "--model mlp --batch-per-replica 8 --compute-steps 3";
  // On the devices at hand: the all-reduce check at one small size, then the step's table.
  const Result here = compare(folder.path(), "--gpus 2 -b 64K -e 64K -n 2 -w 1 --rounds 1 " + step);
  ASSERT_EQ(here.status, 0) << here.output;
  const std::string text = flat(here.output);
  EXPECT_NE(text.find("measuring one replica's forward, backward and update (mlp, 8 "
                      "examples, adam) on /gpu:0, 3 steps"),
            std::string::npos)
      << here.output;
  EXPECT_NE(text.find("measured here on /gpu:0 (CPU-backed virtual GPU): the median of 3 "
                      "steps"),
            std::string::npos)
      << here.output;
  EXPECT_NE(text.find("2 engines (the topology's: CPU cores) compute at once"), std::string::npos)
      << here.output;
  // The ring of the MLP's 940,584 bytes on 2: a reduce step (3 S through the memory) and a copy
  // step (2 S), at 10 GB/s, with 5 us each: 480.3 us, whatever the compute measured.
  EXPECT_NE(text.find("480.3 us"), std::string::npos) << here.output;
  // The row of 2 devices (marked '!' where the second does not pay for itself).
  EXPECT_TRUE(text.find("\n      2       1 ") != std::string::npos ||
              text.find("\n      2!      1 ") != std::string::npos)
      << here.output;
  // --topology this-machine gives no FLOP/s: its compute is measured too.
  const Result fitted = compare(folder.path(), "--topology this-machine -b 1M -e 1M " + step);
  ASSERT_EQ(fitted.status, 0) << fitted.output;
  EXPECT_EQ(count(fitted.output, "# measuring one replica's"), 1u) << fitted.output;
  EXPECT_NE(fitted.output.find("480.3 us"), std::string::npos) << fitted.output;
  // And measured on request on a preset that has one.
  const Result asked =
      compare(folder.path(), "--topology pcie-2 -b 1M -e 1M --compute measured " + step);
  ASSERT_EQ(asked.status, 0) << asked.output;
  EXPECT_NE(flat(asked.output).find("measured here on /gpu:0"), std::string::npos) << asked.output;
}

TEST(CliCompareStep, AModelThatDoesNotFitTheDeviceIsSaidInFlagTerms) {
  mirrorlab::testing::TempFolder folder("compare-step");
  const Result r = compare(folder.path(),
                           "--topology pcie-2 -b 1M -e 1M --compute measured "
                           "--batch-per-replica 4096 --memory-limit 16");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(flat(r.output).find("cannot be measured at --batch-per-replica 4096. Give a smaller "
                                "--batch-per-replica or a higher --memory-limit, or --model mlp"),
            std::string::npos)
      << r.output;
}

// A topology file without a FLOP/s cannot scale the compute to it.
TEST(CliCompareStep, RefusesFlopsOnATopologyWithoutThem) {
  mirrorlab::testing::TempFolder folder("compare-step");
  write_fitted(folder.path() / "fit.toml");
  const Result r = compare(folder.path(), "--topology this-machine --compute flops");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--compute flops: this-machine gives neither a [compute] table nor"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("# measuring"), std::string::npos) << r.output;
  // With one in the file, it does.
  write_fitted(folder.path() / "fit.toml", "flops_tflops = 1\n");
  const Result scaled = compare(folder.path(), "--topology this-machine -b 1M -e 1M");
  EXPECT_EQ(scaled.status, 0) << scaled.output;
  EXPECT_NE(flat(scaled.output).find("scaled to this-machine's FLOP/s"), std::string::npos)
      << scaled.output;
}

// A recording cannot be made again without the machine it was made on: no output of the
// command that replays it may replace it, by its own path or another name for the same file.
TEST(CliCompare, NoOutputReplacesTheRecordingItReplays) {
  mirrorlab::testing::TempFolder folder("compare-replay");
  const std::filesystem::path recording = folder.path() / "fit.json";
  std::filesystem::copy_file(std::string(MIRRORLAB_SOURCE_DIR) +
                                 "/docs/bench/compare-fit-4gpus-2026-11-27-recorded-2core-vm.json",
                             recording);
  const std::string before = mirrorlab::testing::read_file(recording);
  std::filesystem::create_hard_link(recording, folder.path() / "same.json");
  const std::string replay = recording.string();
  for (const std::string output : {"fit.json", "same.json", "./fit.json"}) {
    const Result r = compare(
        folder.path(), "--replay " + replay + " --output " + (folder.path() / output).string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("that is the file --replay " + replay + " reads"), std::string::npos)
        << r.output;
    EXPECT_EQ(mirrorlab::testing::read_file(recording), before) << output;
  }
}

// The lines of `output` wider than `columns` characters, but for one word alone after its
// prefix ("# " or an indent): a path is said whole.
std::string lines_wider_than(const std::string& output, std::size_t columns) {
  std::istringstream lines(output);
  std::string wider;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t words = line.find_first_not_of("# ");
    if (mirrorlab::core::character_count(line) <= columns ||
        (words != std::string::npos && line.find(' ', words) == std::string::npos)) {
      continue;
    }
    wider += line + "\n";
  }
  return wider;
}

// Every line within the terminal's width: the prose wrapped, the tables narrow enough, and a
// column of long words (the busiest resource) under the table where it does not fit beside it.
TEST(CliCompare, EveryLineFitsTheTerminalsWidth) {
  mirrorlab::testing::TempFolder folder("compare-width");
  const std::string recorded = std::string(MIRRORLAB_SOURCE_DIR) + "/docs/bench/compare-";
  const std::string fit = recorded + "fit-4gpus-2026-11-27-recorded-2core-vm.json";
  const std::string fitted = (folder.path() / "fitted.toml").string();
  const Result refit = compare(folder.path(), "--replay " + fit + " --output " + fitted);
  ASSERT_EQ(refit.status, 0) << refit.output;
  const std::vector<std::string> commands = {
      "--topology dgx-h100",
      "--topology dgx-h100-2-nodes --model mlp",
      "--topology pcie-2 --bytes-per-pack 65536",
      "--topology laptop-4-logical",
      "--topology nvlink-pairs-4 --allreduce ring",
      "--replay " + fit,
      "--replay " + recorded + "check-4gpus-2026-11-27-recorded-2core-vm.json --fitted " + fitted};
  for (const auto& [columns, widest] :
       std::vector<std::pair<std::string, std::size_t>>{{"80", 80}, {"100", 100}, {"", 80}}) {
    for (const std::string& args : commands) {
      const Result r =
          mirrorlab::testing::run_command("env COLUMNS=" + columns + " MIRRORLAB_FIT_FILE=" +
                                          (folder.path() / "fit.toml").string() + " " +
                                          MIRRORLAB_BINARY_DIR + "/app/mirrorlab compare " + args);
      ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
      EXPECT_EQ(lines_wider_than(r.output, widest), "") << "COLUMNS=" << columns << " " << args;
    }
  }
  // Where the resource's words do not fit beside the figures: a table of their own.
  const Result shared = compare(folder.path(), "--topology laptop-4-logical");
  EXPECT_NE(shared.output.find("\ndevices  all-reduce's slowest step: busiest resource\n      1  "
                               "-\n      2  reduce-scatter: memory\n"),
            std::string::npos)
      << shared.output;
}

struct BadCompare {
  const char* args;
  const char* expected_words;
};
void PrintTo(const BadCompare& input, std::ostream* os) { *os << '"' << input.args << '"'; }

class CliCompareRefuses : public ::testing::TestWithParam<BadCompare> {};

TEST_P(CliCompareRefuses, WithExitStatus2AndASentence) {
  mirrorlab::testing::TempFolder folder("compare");
  const Result r = compare(folder.path(), GetParam().args);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().expected_words), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("# measuring"), std::string::npos) << "measured: " << r.output;
  EXPECT_FALSE(std::filesystem::exists(folder.path() / "fit.toml")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CliCompareRefuses,
    ::testing::Values(
        BadCompare{"", "this machine has not been fitted yet"},
        BadCompare{"--topology nowhere", "no topology \"nowhere\": the presets are"},
        BadCompare{"--topology dgx-h10",
                   "no topology \"dgx-h10\" (did you mean dgx-h100?): the presets are"},
        BadCompare{"--topology /no/such/file.toml", "/no/such/file.toml"},
        BadCompare{"--topology dgx-h100 --fit", "give one"},
        // Flags a prediction on a preset would ignore.
        BadCompare{"--topology dgx-h100 --fitted x.toml", "which --topology dgx-h100 does not use"},
        BadCompare{"--topology dgx-h100 --output x.toml", "--output needs --fit"},
        BadCompare{"--topology dgx-h100 --gpus 3", "predicts on its own GPUs; leave --gpus out"},
        BadCompare{"--topology pcie-2 --record x.json", "measures no all-reduce: leave --record"},
        // A preset is no fit of devices measured here: said before minutes of measuring.
        BadCompare{"--fitted " MIRRORLAB_SOURCE_DIR "/timing/topologies/pcie-2.toml --gpus 2",
                   "is pcie-2, a machine of separate GPUs (fabric host)"},
        BadCompare{"--fit --backend cuda --devices 0,1", "is not built yet"},
        BadCompare{"--output x.toml", "--output needs --fit"},
        BadCompare{"--fit --gpus 1", "an all-reduce needs at least 2 devices"},
        BadCompare{"--fit -b 2M -e 1M", "is larger than -e/--maxbytes"},
        BadCompare{"--topology dgx-h100 -b 2M -e 1M", "is larger than -e/--maxbytes"},
        BadCompare{"--fit -e 600M", "lower -e or raise --memory-limit"},
        BadCompare{"--fit -e nan", "--maxbytes: 'nan' is not a size"},
        BadCompare{"--fit --rounds 0", "--rounds"}, BadCompare{"--fit -f inf", "--stepfactor"},
        BadCompare{"--fitted /no/such.toml", "/no/such.toml"},
        BadCompare{"--replay /no/such.json", "--replay /no/such.json: cannot be read"},
        BadCompare{"--replay /no/such.json --fit", "--replay measures nothing, --fit measures"},
        BadCompare{"--replay /no/such.json --record x.json", "--record with --replay"},
        BadCompare{"--fit --record /no/such/folder/x.json", "--record /no/such/folder/x.json"},
        // The training step's flags.
        BadCompare{"--topology dgx-h100 --model resnet", "'resnet' is not one of cnn, mlp"},
        BadCompare{"--topology dgx-h100 --batch-per-replica nan", "'nan' is not a number"},
        BadCompare{"--topology dgx-h100 --batch-per-replica inf", "'inf' is not a finite number"},
        BadCompare{"--topology dgx-h100 --batch-per-replica 0", "'0' is out of range"},
        BadCompare{"--topology dgx-h100 --batch-per-replica -64", "'-64' is negative"},
        BadCompare{"--topology dgx-h100 --batch-per-replica 1e9", "'1e9' is not a whole number"},
        BadCompare{"--topology dgx-h100 --batch-per-replica 99999999999999999999", "is too large"},
        BadCompare{"--topology dgx-h100 --batch-per-replica 65537", "from 1 to 65536"},
        BadCompare{"--topology dgx-h100 --compute-steps 0", "--compute-steps: '0' is out of range"},
        BadCompare{"--topology dgx-h100 --compute magic",
                   "'magic' is not one of auto, measured, flops"},
        BadCompare{"--topology dgx-h100 --optimizer rmsprop", "'rmsprop' is not one of"},
        BadCompare{"--topology laptop-4-logical --allreduce nccl",
                   "NCCL cannot run on laptop-4-logical (it needs one GPU per rank)"},
        BadCompare{"--gpus 2 --allreduce nccl", "NCCL cannot run on the devices at hand"},
        BadCompare{"--topology pcie-2 --allreduce one-shot",
                   "--allreduce one-shot cannot run on pcie-2: its kernels read and write every "
                   "GPU's memory"},
        BadCompare{"--topology dgx-h100-2-nodes --allreduce one-shot",
                   "cannot run across dgx-h100-2-nodes's nodes"},
        BadCompare{"--gpus 2 --compute flops", "on the devices at hand the compute is measured"}));

}  // namespace
