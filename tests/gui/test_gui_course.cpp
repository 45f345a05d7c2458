// Every step of every lesson in the presenter layout (`gui --lesson N --every-step --present`:
// the steps played in one window, as Next plays them, a report written of each) as a lecturer
// puts it on a projector: 1280x720 at font scale 1.5; every step again at two screen sizes and
// three font scales for its text (GuiCourseText); and every panel at those (GuiText). Each step
// must play with its checks passing, show the panel it looks at, give that panel at least 65% of
// the window (the share is printed for each step), and show there the number each of its questions
// asks for: the window's report has every panel's words as drawn (gui/model/gui_report.h). Under
// Xvfb; skips with the reason where it or the data set is missing. Its own program, so that ctest
// runs it outside the sanitizer stage (slow content, no code of its own: tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
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

// The quantities in a text: each number as written, and, where a unit follows it, also in that
// unit's base (seconds, bytes): "0.451 ms" gives {0.451, ""} and {0.000451, "s"}.
struct Quantity {
  double value;
  std::string base;  // "" for the number as written
};
std::vector<Quantity> quantities(const std::string& text) {
  static const std::map<std::string, std::pair<std::string, double>> kUnits = {
      {"ns", {"s", 1e-9}},
      {"\xC2\xB5s", {"s", 1e-6}},
      {"us", {"s", 1e-6}},
      {"ms", {"s", 1e-3}},
      {"s", {"s", 1}},
      {"B", {"B", 1}},
      {"bytes", {"B", 1}},
      {"KiB", {"B", 1024.0}},
      {"MiB", {"B", 1048576.0}},
      {"GiB", {"B", 1073741824.0}},
      {"x", {"x", 1}}};  // a speed-up: "1.97x"
  static const std::regex kNumber(
      "(-?[0-9][0-9,]*(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\\s*"
      "(ns|\xC2\xB5s|us|ms|s|bytes|B|KiB|MiB|GiB|x)?(?![A-Za-z])");
  std::vector<Quantity> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kNumber);
       it != std::sregex_iterator(); ++it) {
    std::string digits = (*it)[1];
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    const double value = std::strtod(digits.c_str(), nullptr);
    out.push_back({value, ""});
    if ((*it)[2].matched) {
      const auto& [base, factor] = kUnits.at((*it)[2]);
      out.push_back({value * factor, base});
    }
  }
  return out;
}

// Whether `panel` shows `answer` ("98.8 \xC2\xB5s", "2821752 bytes", "16"): the same number in
// the same unit, or in another unit of the same kind ("0.0988 ms"), within the 3 figures answers
// are rounded to.
bool shows(const std::string& panel_words, const std::string& answer) {
  // A device's number is its name, not a figure: "/gpu:2" shows no 2.
  static const std::regex kDevice("(/gpu|GPU|replica|worker|step) ?:?[0-9]+");
  const std::string panel = std::regex_replace(panel_words, kDevice, "$1");
  const std::vector<Quantity> asked = quantities(answer);
  if (asked.empty()) return true;  // not a number: nothing to look for
  const auto close = [](double a, double b) { return std::abs(a - b) <= 0.006 * std::abs(b); };
  for (const Quantity& q : quantities(panel)) {
    for (const Quantity& a : asked) {
      if (q.base == a.base && close(q.value, a.value)) return true;
    }
  }
  return false;
}

TEST(GuiCourseWords, AnAnswerIsFoundByItsNumberInAnyUnitOfItsKind) {
  EXPECT_TRUE(shows("reduce-to-one 98.8 \xC2\xB5s, NCCL 33 \xC2\xB5s", "98.8 \xC2\xB5s"));
  EXPECT_TRUE(shows("took 0.0988 ms", "98.8 \xC2\xB5s"));
  EXPECT_TRUE(shows("bytes received: /gpu:0 2821752, /gpu:1 940584", "2821752 bytes"));
  // Both grouped by three, as the answers and the All-reduce panel now write them.
  EXPECT_TRUE(shows("bytes received: /gpu:0 2,821,752, /gpu:1 940,584", "2,821,752 bytes"));
  EXPECT_FALSE(shows("bytes received: /gpu:0 2,821,752", "940,584 bytes"));
  EXPECT_TRUE(shows("4.1 MiB in use, limit 1,024 MiB", "1024 MiB"));
  EXPECT_TRUE(shows("they give 1.97x the images/s of one", "1.97"));
  EXPECT_FALSE(shows("they give 1.97x the images/s of one", "1.9"));
  EXPECT_FALSE(shows("4.1 MiB in use, limit 1024.0", "2048 MiB"));
  EXPECT_FALSE(shows("images/s 15720", "14.1 ms"));
  EXPECT_FALSE(shows("weighs 0.5 x", "0.667"));
  EXPECT_FALSE(shows("/gpu:2 replica 2 in step 2", "2"));  // names, not figures
}

// No text cut off and no number broken across lines in the frame the report is of (the window's
// text audit, gui/window/text_audit.h).
void expect_text_in_place(const nlohmann::json& report, const std::string& where) {
  EXPECT_GT(report["notes"].value("glyphs", 0.0), 0.0) << where << ": no text audited";
  EXPECT_EQ(report["notes"].value("text_cut", -1.0), 0.0) << where << ": text cut off:\n"
                                                          << report["words"].value("text cut", "");
  EXPECT_EQ(report["notes"].value("numbers_broken", -1.0), 0.0)
      << where << ": numbers broken across lines:\n"
      << report["words"].value("numbers broken", "");
}

class GuiCourse : public GuiApp, public ::testing::WithParamInterface<int> {
 protected:
  int answered_ = 0;  // numeric answers looked for
};

// Plays every step of lesson `number` in one window, as Next goes through them (--every-step),
// at `size` with `flags`, and returns the report of each of its `steps` steps in order, read
// from `pattern` ("{step}" in it is the step's number); a report not written fails the test and
// leaves an empty one in its place.
std::vector<nlohmann::json> every_step_reports(const std::string& pattern, int number,
                                               std::size_t steps, const std::string& size,
                                               const std::string& flags, const std::string& where) {
  const auto of_step = [&](std::size_t s) {
    std::string file = pattern;
    file.replace(file.find("{step}"), 6, std::to_string(s));
    return file;
  };
  for (std::size_t s = 1; s <= steps; ++s) fs::remove(of_step(s));  // none read from a run before
  const Result r =
      shell(kHeadless + " " + size + " " + kMirrorlab + " gui --lesson " + std::to_string(number) +
            " --every-step " + flags + " --report " + pattern);
  EXPECT_EQ(r.status, 0) << where << "\n" << r.output;
  std::vector<nlohmann::json> reports;
  for (std::size_t s = 1; s <= steps; ++s) {
    const bool written = fs::exists(of_step(s));
    EXPECT_TRUE(written) << where << ": no report of step " << s << "\n" << r.output;
    reports.push_back(written ? read_json(of_step(s)) : nlohmann::json::object());
  }
  return reports;
}

TEST_P(GuiCourse, EachStepGivesItsPanelTwoThirdsOfTheWindowOrAllItNeedsAndShowsWhatItAsks) {
  const int number = GetParam();
  const std::vector<fs::path> files = lesson_files();
  ASSERT_LE(number, static_cast<int>(files.size()));
  const std::vector<std::string> panels = looked_at(files[static_cast<std::size_t>(number - 1)]);
  ASSERT_FALSE(panels.empty()) << files[static_cast<std::size_t>(number - 1)];
  // 5 frames: a table (the Compare panel's speed-up) sizes its columns in its first frames.
  const std::vector<nlohmann::json> reports =
      every_step_reports(path("step-{step}.json"), number, panels.size(), "1280x720",
                         "--present --width 1280 --height 720 --font-scale 1.5 --frames 5",
                         "lesson " + std::to_string(number));
  for (std::size_t s = 0; s < panels.size(); ++s) {
    const std::string step = std::to_string(s + 1);
    const nlohmann::json& report = reports[s];
    // Present before they are read (a const json's operator[] on a missing key is no failure).
    ASSERT_TRUE(report.contains("panels") && report.contains("notes") && report.contains("words"))
        << report.dump(1);
    ASSERT_TRUE(report["panels"].contains("Lesson")) << report.dump(1);
    const nlohmann::json& lesson = report["panels"]["Lesson"];
    EXPECT_EQ(lesson.value("step", 0.0), s + 1.0) << report.dump(1);
    EXPECT_EQ(lesson.value("checks_failed", 0.0), 0.0)
        << "lesson " << number << " step " << step << "; the Lesson panel said:\n"
        << report["words"].value("Lesson", "");
    ASSERT_FALSE(panels[s].empty()) << "lesson " << number << " step " << step << " looks at none";
    ASSERT_TRUE(report["panels"].contains(panels[s]))
        << "lesson " << number << " step " << step << " did not draw " << panels[s];
    const double share = report["notes"].value("highlighted_panel_area_share", 0.0);
    // Measured, not yet held: what of the panel is below its window (the Compare panel's
    // speed-up and the Controls do not fit at this size yet).
    const double hidden = report["panels"][panels[s]].value("hidden_below_px", 0.0);
    // And of the step's text in the strip (T or --tall-lesson-text makes the strip taller).
    const double text_hidden = lesson.value("text_hidden_below_px", 0.0);
    std::printf(
        "lesson %d step %s: %s gets %.1f%% of the window%s%s\n", number, step.c_str(),
        panels[s].c_str(), 100 * share,
        hidden > 0
            ? (", " + std::to_string(static_cast<int>(hidden)) + " px of it below the fold").c_str()
            : "",
        text_hidden > 0
            ? (", the step's text scrolls " + std::to_string(static_cast<int>(text_hidden)) + " px")
                  .c_str()
            : "");
    // Less only where the strip took room the panel left empty: the panel shows all it has,
    // and is not one whose picture is sized to its room (those keep the share's room), or its
    // picture has all the room it says it can use (a Timeline's lanes at their tallest).
    const double short_of = report["panels"][panels[s]].value("short_of_px", -1.0);
    const bool picture = report["panels"][panels[s]].value("fills_room", 1.0) != 0;
    const double short_of_most = report["panels"][panels[s]].value("short_of_most_px", -1.0);
    EXPECT_TRUE(share >= kLeastShare || (!picture && short_of == 0) ||
                (picture && short_of_most >= 0 && short_of_most < 1))
        << "lesson " << number << " step " << step << ": " << panels[s] << " gets " << share
        << " of the window" << (picture ? ", a picture sized to its room" : "") << ", needing "
        << short_of << " px more";
    expect_text_in_place(report, "lesson " + std::to_string(number) + " step " + step);
    // Every number a question asks for is on the screen, in the panel the step frames.
    const nlohmann::json& words = report["words"];
    const std::string shown = words.value(panels[s], "");
    for (int k = 1; words.contains("answer " + std::to_string(k)); ++k) {
      if (!report["notes"].contains("answer " + std::to_string(k))) continue;  // a choice
      const std::string answer = words.value("answer " + std::to_string(k), "");
      EXPECT_TRUE(shows(shown, answer))
          << "lesson " << number << " step " << step << ": \""
          << words.value("question " + std::to_string(k), "") << "\" is answered " << answer
          << ", which the " << panels[s] << " panel does not show. It shows:\n"
          << shown;
      ++answered_;
    }
  }
  std::printf("lesson %d: %d numeric answers, each found in its step's panel\n", number, answered_);
  EXPECT_GT(answered_, 0) << "every lesson asks for a number somewhere: none was looked for";
}

// The caption strip tall (--tall-lesson-text, T in the window): lesson 8's first step, whose
// Compare panel at 1280x720 and font 1.5 leaves the strip no room, so that its text and questions
// both scroll in the quarter-height strip, reads whole in the tall one, text and questions, and
// its panel keeps about 40% of the window above it.
class GuiCourseTall : public GuiApp {};

nlohmann::json lesson_step_report(const std::string& json, int lesson, int step,
                                  const std::string& size, const std::string& flags) {
  fs::remove(json);
  const std::string w = size.substr(0, size.find('x')), h = size.substr(size.find('x') + 1);
  const Result r =
      shell(kHeadless + " " + size + " " + kMirrorlab + " gui --lesson " + std::to_string(lesson) +
            " --lesson-step " + std::to_string(step) + " " + flags + " --width " + w +
            " --height " + h + " --font-scale 1.5 --frames 5 --report " + json);
  EXPECT_EQ(r.status, 0) << flags << "\n" << r.output;
  return read_json(json);
}

TEST_F(GuiCourseTall, TheTallStripShowsAStepsTextAndQuestionsWhole) {
  const nlohmann::json strip =
      lesson_step_report(path("strip.json"), 8, 1, "1280x720", "--present");
  const nlohmann::json tall =
      lesson_step_report(path("tall.json"), 8, 1, "1280x720", "--tall-lesson-text");
  ASSERT_TRUE(strip.contains("panels") && strip["panels"].contains("Lesson")) << strip.dump(1);
  ASSERT_TRUE(tall.contains("panels") && tall["panels"].contains("Lesson")) << tall.dump(1);
  for (const char* column : {"text_hidden_below_px", "asked_hidden_below_px"}) {
    EXPECT_GT(strip["panels"]["Lesson"].value(column, 0.0), 0.0)
        << column << ": the step fits the quarter strip: pick a longer step for this test";
    EXPECT_EQ(tall["panels"]["Lesson"].value(column, -1.0), 0.0) << column;
  }
  ASSERT_TRUE(tall.contains("notes")) << tall.dump(1);
  const double share = tall["notes"].value("highlighted_panel_area_share", 0.0);
  EXPECT_GE(share, 0.35) << "the Compare panel's share of the window under the tall strip";
  EXPECT_LT(
      share,
      strip.value("notes", nlohmann::json::object()).value("highlighted_panel_area_share", 0.0));
  EXPECT_FALSE(tall["panels"].contains("Controls")) << "tall is a presenter layout";
  expect_text_in_place(tall, "lesson 8 step 1, tall strip");
}

// The quarter strip fitted to what it holds: at 1920x1080, font 1.5, lesson 10's last step fills
// its Devices panel's top third and has more text than a quarter of the window shows. The strip
// grows into the panel's empty room until the text reads whole, and the panel still shows all it
// has. (Its first step's panel needs its room: there the strip grows less.)
TEST_F(GuiCourseTall, TheStripGrowsIntoThePanelsEmptyRoomAndNoFurther) {
  const nlohmann::json last = lesson_step_report(path("fit.json"), 10, 4, "1920x1080", "--present");
  ASSERT_TRUE(last.contains("panels") && last["panels"].contains("Lesson") &&
              last["panels"].contains("Devices"))
      << last.dump(1);
  const nlohmann::json& lesson = last["panels"]["Lesson"];
  EXPECT_EQ(lesson.value("text_hidden_below_px", -1.0), 0.0) << lesson.dump(1);
  EXPECT_GT(lesson.value("strip_height_share", 0.0), 0.30) << lesson.dump(1);
  EXPECT_LE(lesson.value("strip_refits", 99.0), 4.0) << "the text moved about: " << lesson.dump(1);
  EXPECT_EQ(last["panels"]["Devices"].value("short_of_px", -1.0), 0.0) << last.dump(1);
  EXPECT_EQ(last["panels"]["Devices"].value("hidden_below_px", -1.0), 0.0) << last.dump(1);
  expect_text_in_place(last, "lesson 10 step 4, fitted strip");
}

// Every lesson of lessons/, by its number.
std::vector<int> lesson_numbers() {
  std::vector<int> numbers(lesson_files().size());
  for (std::size_t i = 0; i < numbers.size(); ++i) numbers[i] = static_cast<int>(i) + 1;
  return numbers;
}

INSTANTIATE_TEST_SUITE_P(Lessons, GuiCourse, ::testing::ValuesIn(lesson_numbers()),
                         [](const auto& info) { return "lesson" + std::to_string(info.param); });

// Every step of every lesson on the other screens a lecturer or a student has: 1280x720 and
// 1920x1080 at font scales 1, 1.5 and 2 in the presenter layout (1280x720 at 1.5 is GuiCourse's),
// and the usual layout where a lesson opens in it (at 1920x1080 with font scale 1; on a smaller
// screen or with a larger font it opens in the presenter one): no text cut off, no number broken
// across lines, the step's checks passing.
struct LessonScreen {
  int lesson;
  int width, height;
  double font;
  bool present;
};
class GuiCourseText : public GuiApp, public ::testing::WithParamInterface<LessonScreen> {};

TEST_P(GuiCourseText, NoStepCutsItsTextOrBreaksANumber) {
  const LessonScreen screen = GetParam();
  const std::vector<fs::path> files = lesson_files();
  ASSERT_LE(screen.lesson, static_cast<int>(files.size()));
  const std::size_t steps = looked_at(files[static_cast<std::size_t>(screen.lesson - 1)]).size();
  ASSERT_GT(steps, 0u);
  const std::string size = std::to_string(screen.width) + "x" + std::to_string(screen.height);
  char font[16];
  std::snprintf(font, sizeof font, "%g", screen.font);
  const std::string screen_words =
      size + ", font " + font + (screen.present ? ", presenter layout" : ", usual layout");
  const std::vector<nlohmann::json> reports = every_step_reports(
      path("step-{step}.json"), screen.lesson, steps, size,
      std::string(screen.present ? "--present" : "") + " --width " + std::to_string(screen.width) +
          " --height " + std::to_string(screen.height) + " --font-scale " + font + " --frames 5",
      "lesson " + std::to_string(screen.lesson) + ", " + screen_words);
  for (std::size_t s = 1; s <= steps; ++s) {
    const std::string where = "lesson " + std::to_string(screen.lesson) + " step " +
                              std::to_string(s) + ", " + screen_words;
    const nlohmann::json& report = reports[s - 1];
    ASSERT_TRUE(report.contains("panels") && report["panels"].contains("Lesson")) << where;
    EXPECT_EQ(report["panels"]["Lesson"].value("checks_failed", 0.0), 0.0)
        << where << "; the Lesson panel said:\n"
        << report.value("words", nlohmann::json::object()).value("Lesson", "");
    if (!screen.present) {
      EXPECT_TRUE(report["panels"].contains("Controls")) << where << ": not the usual layout";
    }
    expect_text_in_place(report, where);
  }
}

std::vector<LessonScreen> lesson_screens() {
  std::vector<LessonScreen> out;
  for (const int lesson : lesson_numbers()) {
    for (const LessonScreen& s :
         {LessonScreen{lesson, 1280, 720, 1, true}, LessonScreen{lesson, 1280, 720, 2, true},
          LessonScreen{lesson, 1920, 1080, 1, true}, LessonScreen{lesson, 1920, 1080, 1.5, true},
          LessonScreen{lesson, 1920, 1080, 2, true}, LessonScreen{lesson, 1920, 1080, 1, false}}) {
      out.push_back(s);
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(LessonScreens, GuiCourseText, ::testing::ValuesIn(lesson_screens()),
                         [](const auto& info) {
                           const LessonScreen& s = info.param;
                           return "lesson" + std::to_string(s.lesson) + "_" +
                                  std::to_string(s.width) + "x" + std::to_string(s.height) +
                                  "_font" + std::to_string(static_cast<int>(s.font * 10)) +
                                  (s.present ? "_presenter" : "_usual");
                         });

// Every panel alone and all of them, in the usual layout and (all of them) the presenter one,
// at a projector's 1280x720 and a screen's 1920x1080, font scales 1, 1.5 and 2: no text cut
// off, no number broken across lines.
struct Screen {
  int width, height;
  double font;
};
class GuiText : public GuiApp, public ::testing::WithParamInterface<Screen> {};

TEST_P(GuiText, NoPanelCutsItsTextOrBreaksANumber) {
  const Screen screen = GetParam();
  const std::string size = std::to_string(screen.width) + "x" + std::to_string(screen.height);
  char font[16];
  std::snprintf(font, sizeof font, "%g", screen.font);
  const std::vector<std::string> views = {"",
                                          "--panel Devices",
                                          "--panel 'Batch split'",
                                          "--panel Gradients",
                                          "--panel All-reduce",
                                          "--panel Training",
                                          "--panel Timeline",
                                          "--panel Compare",
                                          "--present"};
  for (const std::string& view : views) {
    const std::string json = path("text.json");
    fs::remove(json);  // a report not written is not read from the view before
    const Result r = shell(
        kHeadless + " " + size + " " + kMirrorlab + " gui --width " + std::to_string(screen.width) +
        " --height " + std::to_string(screen.height) + " --font-scale " + font +
        " --steps 20 --train-examples 2048 --frames 3 " + view + " --report " + json);
    const std::string where = size + ", font " + font + ", " + (view.empty() ? "all panels" : view);
    ASSERT_EQ(r.status, 0) << where << "\n" << r.output;
    expect_text_in_place(read_json(json), where);
  }
}

INSTANTIATE_TEST_SUITE_P(Screens, GuiText,
                         ::testing::Values(Screen{1280, 720, 1}, Screen{1280, 720, 1.5},
                                           Screen{1280, 720, 2}, Screen{1920, 1080, 1},
                                           Screen{1920, 1080, 1.5}, Screen{1920, 1080, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height) + "_font" +
                                  std::to_string(static_cast<int>(info.param.font * 10));
                         });

}  // namespace
