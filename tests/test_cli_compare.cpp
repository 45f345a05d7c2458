// `mirrorlab compare` as a user runs it: a fit on CPU virtual GPUs saved and checked, a preset
// predicted, and every bad input refused with exit status 2 and a sentence, measuring nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "command_output.h"
#include "temp_folder.h"

namespace {

using Result = mirrorlab::testing::CommandOutput;

// With the fitted file kept in `folder`, whatever HOME holds.
Result compare(const std::filesystem::path& folder, const std::string& args) {
  return mirrorlab::testing::run_command("MIRRORLAB_FIT_FILE=" + (folder / "fit.toml").string() +
                                         " " + MIRRORLAB_BINARY_DIR + "/app/mirrorlab compare " +
                                         args);
}

TEST(CliCompare, FitsSavesAndChecksOnCpuVirtualGpus) {
  mirrorlab::testing::TempFolder folder("compare");
  // Small sizes only, one round: this checks the command, not the model (docs/ has that).
  const std::string sizes = "--gpus 2 -b 64K -e 256K -f 4 -n 2 -w 1 --rounds 1";
  const Result fit = compare(folder.path(), "--fit " + sizes);
  ASSERT_EQ(fit.status, 0) << fit.output;
  EXPECT_NE(fit.output.find("the latencies fitted:"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("Saved to " + (folder.path() / "fit.toml").string()),
            std::string::npos) << fit.output;
  std::ifstream in(folder.path() / "fit.toml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("id = 'this-machine'"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("fabric = \"shared-memory\""), std::string::npos) << text.str();
  // Each algorithm with a schedule on 2 devices, at the two sizes, predicted beside measured.
  for (const char* table : {"# reduce-to-one on 2 devices", "# ring on 2 devices",
                            "# one-shot on 2 devices"}) {
    EXPECT_NE(fit.output.find(table), std::string::npos) << table << "\n" << fit.output;
  }
  EXPECT_NE(fit.output.find("of 6 ('!' marks the others)"), std::string::npos) << fit.output;

  // Without --fit the saved file is what is checked; --topology this-machine predicts with it.
  const Result check = compare(folder.path(), sizes);
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_EQ(check.output.find("Fitting"), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("of 6 ('!' marks the others)"), std::string::npos) << check.output;
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
        BadCompare{"--topology /no/such/file.toml", "/no/such/file.toml"},
        BadCompare{"--topology dgx-h100 --fit", "give one"},
        BadCompare{"--output x.toml", "--output needs --fit"},
        BadCompare{"--fit --gpus 1", "an all-reduce needs at least 2 devices"},
        BadCompare{"--fit -b 2M -e 1M", "is larger than -e/--maxbytes"},
        BadCompare{"--topology dgx-h100 -b 2M -e 1M", "is larger than -e/--maxbytes"},
        BadCompare{"--fit -e 600M", "lower -e or raise --memory-limit"},
        BadCompare{"--fit -e nan", "--maxbytes: 'nan' is not a size"},
        BadCompare{"--fit --rounds 0", "--rounds"},
        BadCompare{"--fit -f inf", "--stepfactor"},
        BadCompare{"--fitted /no/such.toml", "/no/such.toml"}));

}  // namespace
