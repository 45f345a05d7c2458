// The files a command writes may not replace a file of mirrorlab's of another kind, wherever it
// lies and whatever its name: a checkpoint's (by its name, or by the format its first bytes
// name), a recording of `compare --record` (which only --record replaces).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/output/output_files.h"
#include "tests/support/temp_folder.h"

namespace {

using mirrorlab::app::OutputFiles;
namespace fs = std::filesystem;

std::string write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(OutputFiles, AFileOfMirrorlabsOfAnotherKindIsNotReplaced) {
  const mirrorlab::testing::TempFolder folder("output-kinds");
  const fs::path& dir = folder.path();
  const std::string named = write(dir / "ckpt-00000003.json", "{}");
  const std::string manifest =
      write(dir / "kept.json", "{\"config\": {}, \"format\": \"mirrorlab-checkpoint\"}");
  const std::string weights = write(
      dir / "w.bin", std::string("\x40\0\0\0\0\0\0\0", 8) +
                         "{\"__metadata__\":{\"format\":\"mirrorlab-checkpoint\",\"step\":\"3\"}}");
  const std::string recording =
      write(dir / "gpu.json", "{\n  \"format\": \"mirrorlab compare measurements\",\n}");
  for (const std::string& path : {named, manifest, weights}) {
    OutputFiles files;
    EXPECT_EQ(files.add("--history", path),
              "--history " + path +
                  ": that is a checkpoint's file, which --history would replace; write --history "
                  "to another file");
  }
  OutputFiles files;
  EXPECT_EQ(files.add("--output", recording),
            "--output " + recording +
                ": that is a recording of 'mirrorlab compare --record', which --output would "
                "replace; write --output to another file");
  EXPECT_EQ(files.add("--record", weights, true, OutputFiles::Writes::kRecording),
            "--record " + weights +
                ": that is a checkpoint's file, which --record would replace; write --record to "
                "another file");
  // Each kind its own: --record writes over a recording, --history over a history.
  EXPECT_EQ(files.add("--record", recording, false, OutputFiles::Writes::kRecording), "");
  const std::string history = write(dir / "history.json", "{\"epochs\": []}");
  EXPECT_EQ(files.add("--history", history), "");
  ASSERT_NE(files.find("--history"), nullptr);
  // Nothing refused was touched.
  EXPECT_EQ(read(manifest), "{\"config\": {}, \"format\": \"mirrorlab-checkpoint\"}");
  EXPECT_EQ(read(named), "{}");
}

}  // namespace
