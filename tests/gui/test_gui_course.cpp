// Every step of every lesson in the presenter layout (`gui --lesson N --lesson-step S --present`)
// as a lecturer puts it on a projector: 1280x720 at font scale 1.5. Each step must play with its
// checks passing, show the panel it looks at, and give that panel at least 65% of the window
// (the share is printed for each step). Under Xvfb; skips with the reason where it or the data
// set is missing. Its own program, so that ctest runs it outside the sanitizer stage (slow
// content, no code of its own: tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/gui/gui_app_support.h"

namespace {

using namespace mirrorlab::testing::gui_app;  // NOLINT: the tests' shared vocabulary
namespace fs = std::filesystem;

constexpr double kLeastShare = 0.65;  // of the window's area, for the step's panel

// The lesson files in course order, and the panel each step of one looks at (its `look_at`).
std::vector<fs::path> lesson_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(MIRRORLAB_SOURCE_DIR) / "lessons")) {
    if (e.path().extension() == ".md" && e.path().filename() != "README.md") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> looked_at(const fs::path& lesson) {
  std::ifstream in(lesson);
  std::vector<std::string> steps;
  std::string line;
  const std::string key = "look_at = \"";
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) steps.emplace_back();
    if (line.rfind(key, 0) == 0 && !steps.empty()) {
      steps.back() = line.substr(key.size(), line.find('"', key.size()) - key.size());
    }
  }
  return steps;
}

class GuiCourse : public GuiApp, public ::testing::WithParamInterface<int> {};

TEST_P(GuiCourse, EachStepInThePresenterLayoutGivesItsPanelTwoThirdsOfTheWindow) {
  const int number = GetParam();
  const std::vector<fs::path> files = lesson_files();
  ASSERT_LE(number, static_cast<int>(files.size()));
  const std::vector<std::string> panels = looked_at(files[static_cast<std::size_t>(number - 1)]);
  ASSERT_FALSE(panels.empty()) << files[static_cast<std::size_t>(number - 1)];
  for (std::size_t s = 0; s < panels.size(); ++s) {
    const std::string step = std::to_string(s + 1);
    const std::string json = path(("step" + step + ".json").c_str());
    const Result r = shell(kHeadless + " 1280x720 " + kMirrorlab + " gui --lesson " +
                           std::to_string(number) + " --lesson-step " + step +
                           " --present --width 1280 --height 720 --font-scale 1.5 --frames 2"
                           " --report " +
                           json);
    ASSERT_EQ(r.status, 0) << "lesson " << number << " step " << step << "\n" << r.output;
    const nlohmann::json report = read_json(json);
    const nlohmann::json& lesson = report["panels"]["Lesson"];
    EXPECT_EQ(lesson["step"], s + 1.0) << report.dump(1);
    EXPECT_EQ(lesson.value("checks_failed", 0.0), 0.0) << "lesson " << number << " step " << step;
    ASSERT_FALSE(panels[s].empty()) << "lesson " << number << " step " << step << " looks at none";
    EXPECT_TRUE(report["panels"].contains(panels[s]))
        << "lesson " << number << " step " << step << " did not draw " << panels[s];
    const double share = report["notes"].value("highlighted_panel_area_share", 0.0);
    std::printf("lesson %d step %s: %s gets %.1f%% of the window\n", number, step.c_str(),
                panels[s].c_str(), 100 * share);
    EXPECT_GE(share, kLeastShare) << "lesson " << number << " step " << step << ": " << panels[s];
  }
}

INSTANTIATE_TEST_SUITE_P(Lessons, GuiCourse, ::testing::Range(1, 11),
                         [](const auto& info) { return "lesson" + std::to_string(info.param); });

}  // namespace
