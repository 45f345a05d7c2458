// What the tests of `mirrorlab gui` under Xvfb share: running the window as a user would, a
// fixture with a folder of its own (skipping with the reason where Xvfb or the data set is
// missing), and reading the report the window writes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/support/command_output.h"

namespace mirrorlab::testing::gui_app {

namespace fs = std::filesystem;

using Result = mirrorlab::testing::CommandOutput;
inline Result shell(const std::string& command) { return mirrorlab::testing::run_command(command); }

inline const std::string kMirrorlab = std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab";

// scripts/headless: a fresh virtual X server on a display it picks itself, then the command's
// own status.
inline const std::string kHeadless = std::string(MIRRORLAB_SOURCE_DIR) + "/scripts/headless";

// Runs `mirrorlab gui ARGS` on a fresh virtual X server of 1600x1000.
inline Result gui(const std::string& args) {
  return shell(kHeadless + " 1600x1000 " + kMirrorlab + " gui " + args);
}

// The same with this machine's fit read from `fit_file` (which need not exist).
inline Result gui_with_fit(const std::string& fit_file, const std::string& args) {
  return shell("MIRRORLAB_FIT_FILE='" + fit_file + "' " + kHeadless + " 1600x1000 " + kMirrorlab +
               " gui " + args);
}

// A fit `mirrorlab compare --fit` saved on the 2-core development VM (4 CPU virtual GPUs).
inline const std::string kSavedFit =
    std::string(MIRRORLAB_SOURCE_DIR) + "/docs/bench/this-machine-2026-11-25-2core-vm.toml";

class GuiApp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shell("command -v Xvfb").status != 0) {
      GTEST_SKIP() << "Xvfb not found: apt-get install xvfb (scripts/setup does)";
    }
    if (!fs::exists("/usr/share/datasets/fashion-mnist")) {
      GTEST_SKIP() << "Fashion-MNIST not found: apt-get install dataset-fashion-mnist";
    }
    // One folder, so TearDown removes it all: a parameterized test's name has a '/' in it.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    dir_ = fs::temp_directory_path() / ("mirrorlab-gui-" + std::to_string(::getpid()) + "-" + name);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  // `mirrorlab gui ARGS` as a projector shows it (1280x720 unless given, font 1.5, the presenter
  // layout), scripted for `frames` frames: its report, written to `json` in the test's folder.
  nlohmann::json projected(const std::string& args, const char* json, int frames = 3,
                           const std::string& screen = "1280x720");
  fs::path dir_;
};

// Whether panel `panel` of a report drew `words`, each space or line break between words one
// space (the report keeps them as ImGui logged them).
inline bool panel_says(const nlohmann::json& report, const char* panel, const std::string& words) {
  std::string text;
  for (char c : report["words"].value(panel, "")) {
    const bool gap = c == ' ' || c == '\n';
    if (!gap || (!text.empty() && text.back() != ' ')) text += gap ? ' ' : c;
  }
  return text.find(words) != std::string::npos;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline nlohmann::json GuiApp::projected(const std::string& args, const char* json, int frames,
                                        const std::string& screen) {
  const std::string width = screen.substr(0, screen.find('x')),
                    height = screen.substr(screen.find('x') + 1);
  const Result r = shell(kHeadless + " " + screen + " " + kMirrorlab + " gui " + args +
                         " --present --font-scale 1.5 --width " + width + " --height " + height +
                         " --frames " + std::to_string(frames) + " --report " + path(json));
  EXPECT_EQ(r.status, 0) << r.output;
  return read_json(path(json));
}

}  // namespace mirrorlab::testing::gui_app
