// The GUI's pure parts, without a window: the timeline's folding, the palettes, the report,
// the screenshot's row flip, the panels' layout and a scripted run's decisions. The timing
// model's data the Compare and All-reduce panels draw is in test_gui_model.
#include <GLFW/glfw3.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/io/synthetic_dataset.h"
#include "core/session/training_session.h"
#include "gui/drawing/chart.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/lesson_text.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/model/gui_report.h"
#include "gui/panels/lesson/clicker.h"
#include "gui/panels/panel_layout.h"
#include "gui/panels/step/devices_panel.h"
#include "gui/panels/step/step_moment.h"
#include "gui/panels/step/timeline_panel.h"
#include "gui/panels/strip_fit.h"
#include "gui/window/pressed_keys.h"
#include "gui/window/screenshot.h"
#include "gui/window/scripted_run.h"
#include "gui/window/text_audit.h"
#include "imgui.h"
#include "imgui_internal.h"
#ifdef MIRRORLAB_HAVE_LESSONS
#include "gui/panels/lesson/strip_columns.h"
#include "lessons/player/lesson.h"
#endif
#include "nlohmann/json.hpp"
#include "tests/gui/imgui_test_support.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::gui {
namespace {

// `n` spans of `length` seconds, one every `period` seconds from 0.
std::vector<TimelineSpan> spans(int n, double length, double period) {
  std::vector<TimelineSpan> v;
  for (int i = 0; i < n; ++i) v.push_back({i * period, i * period + length, std::size_t(i)});
  return v;
}

TEST(TimelineLayout, WideSpansAreDrawnOneByOne) {
  const auto lane = spans(10, 0.08, 0.1);  // 80 px wide at 1000 px per second
  const auto blocks = layout_lane(lane, 0.0, 1.0, 1000.0f);
  ASSERT_EQ(blocks.size(), 10u);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].count, 1u);
    EXPECT_EQ(blocks[i].first, i);
    EXPECT_NEAR(blocks[i].x0, 100.0f * i, 1e-3);
    EXPECT_NEAR(blocks[i].x1 - blocks[i].x0, 80.0f, 1e-3);
  }
}

TEST(TimelineLayout, SpansNarrowerThanThreePixelsFoldIntoBlocksWithACount) {
  const auto lane = spans(100000, 0.0005, 0.001);  // 100,000 spans over 100 s on 1000 px
  const auto blocks = layout_lane(lane, 0.0, 100.0, 1000.0f);
  std::size_t total = 0;
  for (const auto& b : blocks) total += b.count;
  EXPECT_EQ(total, lane.size());    // every span is accounted for
  EXPECT_LE(blocks.size(), 1000u);  // at most about one block per pixel
  EXPECT_GT(blocks.front().count, 1u);
}

TEST(TimelineLayout, OnlyVisibleSpansAreLaidOut) {
  const auto lane = spans(1000, 0.08, 0.1);  // 0 .. 100 s
  const auto blocks = layout_lane(lane, 50.0, 51.0, 1000.0f);
  ASSERT_FALSE(blocks.empty());
  EXPECT_LE(blocks.size(), 11u);
  EXPECT_NEAR(lane[blocks.front().first].begin, 50.0, 1e-9);  // 49.9 .. 49.98 ends before it
  EXPECT_NEAR(lane[blocks.back().first].begin, 51.0, 1e-9);   // begins at its right edge
  EXPECT_TRUE(layout_lane(lane, 200.0, 201.0, 1000.0f).empty());
  EXPECT_TRUE(layout_lane({}, 0.0, 1.0, 100.0f).empty());
}

TEST(TimelineLayout, AWideSpanAfterAFoldStaysItsOwnBlock) {
  std::vector<TimelineSpan> lane = spans(50, 0.0001, 0.0002);  // 0 .. 10 ms, tiny
  lane.push_back({0.02, 0.5, 50});                             // then 480 ms
  const auto blocks = layout_lane(lane, 0.0, 1.0, 1000.0f);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].count, 50u);
  EXPECT_EQ(blocks[1].count, 1u);
  EXPECT_EQ(blocks[1].first, 50u);
}

TEST(Colors, ReplicaColoursAreOkabeItoAndDistinct) {
  EXPECT_EQ(replica_rgb(0), 0xE69F00u);
  EXPECT_EQ(replica_rgb(1), 0x56B4E9u);
  std::set<std::uint32_t> seen;
  for (int i = 0; i < kNumReplicaColors; ++i) seen.insert(replica_rgb(i));
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kNumReplicaColors));
  EXPECT_EQ(replica_rgb(kNumReplicaColors), replica_rgb(0));  // cycles
  // ImGui's ImU32 is 0xAABBGGRR.
  EXPECT_EQ(rgb(0x112233), 0xFF332211u);
  EXPECT_EQ(text_color_on(0xF0E442), rgb(0x000000));  // yellow: black text
  EXPECT_EQ(text_color_on(0x0072B2), rgb(0xFFFFFF));  // blue: white text
}

TEST(Colors, EveryAllReduceAlgorithmHasItsOwnColour) {
  std::set<std::uint32_t> seen;
  for (const std::string_view name :
       {vgpu::kReduceToOneName, vgpu::kRingName, vgpu::kOneShotName, vgpu::kNcclName}) {
    EXPECT_TRUE(seen.insert(algorithm_rgb(name)).second) << name << " shares a colour";
    EXPECT_NE(algorithm_rgb(name), algorithm_rgb("no-such-algorithm")) << name;
  }
}

TEST(GuiReport, CountsFramesPerPanelAndKeepsTheLatestCounts) {
  GuiReport report;
  report.begin_frame();
  report.drew("Devices", "cards", 2);
  report.drew("Devices", "bars", 2);
  report.begin_frame();
  report.drew("Devices", "cards", 3);
  report.note("frames_per_second", 61.5);
  const auto j = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(j["frames"], 2);
  EXPECT_EQ(j["panels"]["Devices"]["frames"], 2);
  EXPECT_EQ(j["panels"]["Devices"]["cards"], 3.0);
  EXPECT_EQ(j["notes"]["frames_per_second"], 61.5);
  EXPECT_TRUE(report.panel_drew("Devices"));
  EXPECT_FALSE(report.panel_drew("Timeline"));
}

TEST(Screenshot, FlipRowsPutsTheBottomRowFirst) {
  // 2 x 3 pixels, rows 0, 1, 2 filled with 0, 1, 2.
  std::vector<std::uint8_t> rgb(2 * 3 * 3);
  for (int y = 0; y < 3; ++y) std::fill_n(rgb.begin() + y * 6, 6, std::uint8_t(y));
  flip_rows(rgb, 2, 3);
  EXPECT_EQ(rgb[0], 2);
  EXPECT_EQ(rgb[6], 1);
  EXPECT_EQ(rgb[12], 0);
}

// F12's numbered screenshots never replace one an earlier window saved in the folder.
TEST(Screenshot, TheNextNumberedNameSkipsTheFilesThereAndNeverReplacesOne) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("mirrorlab-shots-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "mirrorlab-001.png") << "an earlier session's";
  std::ofstream(dir / "mirrorlab-002.png") << "an earlier session's";
  fs::create_symlink("nowhere", dir / "mirrorlab-004.png");  // a dangling link is a file there
  int taken = 0;
  EXPECT_EQ(next_screenshot_path(dir, &taken), dir / "mirrorlab-003.png");
  EXPECT_EQ(taken, 3);
  EXPECT_EQ(next_screenshot_path(dir, &taken), dir / "mirrorlab-005.png");
  EXPECT_EQ(next_screenshot_path("", &taken), fs::path("mirrorlab-006.png"));
  fs::remove_all(dir);
}

std::vector<std::string> panel_names() {
  std::vector<std::string> names;
  for (const auto& p : make_panels()) names.push_back(p->name());
  return names;
}

TEST(PanelLayout, EveryPanelHasOnePlaceAndTogetherTheyFillTheArea) {
  const std::vector<std::string> names = panel_names();
  const auto placed = place_panels(names);
  ASSERT_EQ(placed.size(), names.size());
  double area = 0;
  std::set<std::string> seen;
  for (const auto& [name, r] : placed) {
    EXPECT_TRUE(seen.insert(name).second) << name << " placed twice";
    EXPECT_GT(r.w, 0);
    EXPECT_GT(r.h, 0);
    EXPECT_LE(r.x + r.w, 1.0f + 1e-5f) << name;
    EXPECT_LE(r.y + r.h, 1.0f + 1e-5f) << name;
    area += double(r.w) * r.h;
  }
  EXPECT_NEAR(area, 1.0, 1e-5);
}

TEST(PanelLayout, AnAbsentPanelGivesItsRoomToItsRowAndAnEmptyRowToTheOthers) {
  const auto placed = place_panels({"Timeline", "Devices"});  // one of each of two rows
  ASSERT_EQ(placed.size(), 2u);
  for (const auto& [name, r] : placed) {
    EXPECT_FLOAT_EQ(r.w, 1.0f) << name;
    EXPECT_FLOAT_EQ(r.x, 0.0f) << name;
  }
  EXPECT_EQ(placed[0].first, "Devices");  // rows keep their order
  EXPECT_FLOAT_EQ(placed[0].second.h + placed[1].second.h, 1.0f);
  EXPECT_FLOAT_EQ(placed[1].second.y, placed[0].second.h);
}

TEST(PanelLayout, AnUnknownPanelNameIsRefusedWithTheNamesThereAre) {
  const auto panels = make_panels();
  EXPECT_EQ(check_panel_name("", panels), "");
  EXPECT_EQ(check_panel_name("Timeline", panels), "");
  const std::string problem = check_panel_name("Timelines", panels);
  EXPECT_EQ(problem.rfind("--panel Timelines: no such panel (did you mean Timeline?); the panels "
                          "are ",
                          0),
            0u)
      << problem;
  // Without the flag, for a face that names what was given its own way (Python's panel=).
  EXPECT_EQ(unknown_panel("Gradient", panels).rfind("no such panel (did you mean Gradients?)", 0),
            0u);
  for (const std::string& name : panel_names()) {
    EXPECT_NE(problem.find(name), std::string::npos) << name;
  }
}

// The presenter layout at 1280x720 (a 31-pixel menu bar): no Controls column, the lesson as a
// strip of a quarter of the window's height at the bottom, the panels' room above it.
TEST(WindowLayout, ThePresenterLayoutGivesThePanelsAllButAQuarterStrip) {
  const PixelRect work{0, 31, 1280, 689};
  const WindowLayout p = arrange_window(work, 720, 1.5f, true, true);
  EXPECT_EQ(p.controls.w, 0);
  EXPECT_TRUE(p.lesson_is_strip);
  EXPECT_FLOAT_EQ(p.lesson.h, 180);
  EXPECT_FLOAT_EQ(p.lesson.y + p.lesson.h, 720);
  EXPECT_FLOAT_EQ(p.panels.w, 1280);
  EXPECT_FLOAT_EQ(p.panels.y + p.panels.h, p.lesson.y);
  EXPECT_GE(p.panels.area() / (1280.0f * 720), 0.65f);
  // Without a lesson the panels take the whole work area.
  const WindowLayout alone = arrange_window(work, 720, 1.5f, false, true);
  EXPECT_EQ(alone.lesson.w, 0);
  EXPECT_FLOAT_EQ(alone.panels.area(), work.area());
}

// Tall (T): the strip takes 55% of the window's 720 pixels, the panels keep the rest above it.
TEST(WindowLayout, ATallCaptionStripGivesTheLessonMoreThanHalfTheWindow) {
  const PixelRect work{0, 31, 1280, 689};
  const WindowLayout p = arrange_window(work, 720, 1.5f, true, true, true);
  EXPECT_FLOAT_EQ(p.lesson.h, 396);
  EXPECT_FLOAT_EQ(p.lesson.y + p.lesson.h, 720);
  EXPECT_FLOAT_EQ(p.panels.y, 31);
  EXPECT_FLOAT_EQ(p.panels.h, 689 - 396);
  // The usual layout has no strip to make tall.
  const WindowLayout u = arrange_window(PixelRect{0, 20, 1600, 980}, 1000, 1.0f, true, false, true);
  EXPECT_FALSE(u.lesson_is_strip);
  EXPECT_FLOAT_EQ(u.lesson.h, 980);
}

TEST(WindowLayout, TheUsualLayoutHasTheControlsLeftAndTheLessonRight) {
  const PixelRect work{0, 20, 1600, 980};
  const WindowLayout u = arrange_window(work, 1000, 1.0f, true, false);
  EXPECT_FALSE(u.lesson_is_strip);
  EXPECT_FLOAT_EQ(u.controls.x, 0);
  EXPECT_FLOAT_EQ(u.controls.w, 330);
  EXPECT_FLOAT_EQ(u.lesson.x + u.lesson.w, 1600);
  EXPECT_FLOAT_EQ(u.panels.x, u.controls.w);
  EXPECT_FLOAT_EQ(u.panels.x + u.panels.w, u.lesson.x);
  EXPECT_FLOAT_EQ(u.panels.h, 980);
}

// The presenter strip fitted at 1280x720 (a 689-pixel work area, a 180-pixel quarter strip).
StripMeasure strip_measure(float strip, float strip_need, float panels_need) {
  StripMeasure m;
  m.base = 180;
  m.total = 689;
  m.strip = strip;
  m.strip_need = strip_need;
  m.panels_need = panels_need;
  m.line = 24;
  return m;
}

TEST(StripFit, AStepsTextGrowsTheStripIntoTheRoomThePanelsLeaveEmpty) {
  StripFit fit;
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 400, 200)), 400);  // all its text, room to spare
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 600, 400)), 289);  // up to the panels' need
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 689, 0)), 689 * kMostCaptionStripShare);
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 600, 600)), 0) << "none spare: its share";
  EXPECT_EQ(fit.refits(), 0);
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 0, 0)), 0) << "nothing measured yet: its share";
}

// A panel measured to need less than a quarter (one sentence, while the step asks) keeps what
// shows it whole, not a quarter: the strip takes the rest for a long step (lesson 9 step 2).
TEST(StripFit, APanelNeedingLessThanAQuarterLendsTheStripTheRest) {
  StripFit fit;
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 689, 100)), 589);
  EXPECT_FALSE(fit.panels_fill());
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 550, 100)), 550) << "no more than the step needs";
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 689, 0)), 689 * kMostCaptionStripShare)
      << "no panel measured: the quarter stays";
}

TEST(StripFit, AShortStepGivesThePanelsItsEmptyRoomOnlyWhenTheyNeedIt) {
  StripFit fit;
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 100, 600)), 100);
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 100, 560)), 129);  // what the panels need, no more
  fit.restart();
  EXPECT_FLOAT_EQ(fit.next(strip_measure(180, 100, 300)), 0) << "both fit: the share stays";
  EXPECT_EQ(fit.refits(), 0);
}

// A chart sized to its window needs all the room it gets, less a margin: giving the strip that
// margin takes it from the chart again, frame after frame, unless the fit sees the panel fill
// (and gives it back the room it has at the share).
TEST(StripFit, PanelsThatFillTheirRoomDoNotLetTheStripCreep) {
  StripFit fit;
  float strip = 180;
  for (int frame = 0; frame < 20; ++frame) {
    const float room = 689 - strip;
    const float fitted = fit.next(strip_measure(strip, 600, room - 40));
    if (fitted > 0) strip = fitted;
  }
  EXPECT_FLOAT_EQ(strip, 180) << "one margin taken, then seen to fill and given back";
  EXPECT_TRUE(fit.panels_fill());
  EXPECT_EQ(fit.refits(), 2);
  // Less than a line spare is no room to read in.
  StripFit small;
  EXPECT_FLOAT_EQ(small.next(strip_measure(180, 600, 509 - 10)), 0);
}

// While a step asks, a panel that fills its room keeps half the work area, not the share's three
// quarters: the strip grows into the rest for the question, and no further, frame after frame.
TEST(StripFit, WhileAStepAsksAPanelThatFillsItsRoomLendsTheStripUpToHalf) {
  StripFit fit;
  float strip = 180;
  const float half = 689 * kAskingPanelsShare;
  for (int frame = 0; frame < 20; ++frame) {
    const float room = 689 - strip;
    StripMeasure m = strip_measure(strip, 600, room - 40);  // a chart sized to its window
    m.panels_least = half;
    const float fitted = fit.next(m);
    if (fitted > 0) strip = fitted;
  }
  EXPECT_FLOAT_EQ(strip, 689 - half);
  EXPECT_TRUE(fit.panels_fill());
  // A step needing less than that takes only what it needs.
  StripFit short_step;
  StripMeasure m = strip_measure(180, 250, 500);
  m.panels_least = half;
  EXPECT_FLOAT_EQ(short_step.next(m), 0) << "the panel needs its share's room: nothing spare";
}

TEST(StripFit, AStepsFittingStopsAfterItsMostTurnsBackButNotForGrowthOneWay) {
  StripFit fit;
  float strip = 180;
  for (int frame = 0; frame < 100; ++frame) {  // the panels' need swinging each frame
    const float fitted = fit.next(strip_measure(strip, 600, frame % 2 == 0 ? 200 : 500));
    if (fitted > 0) strip = fitted;
  }
  EXPECT_EQ(fit.turns(), kMostStripTurns);
  EXPECT_EQ(fit.refits(), kMostStripTurns + 1);
  EXPECT_FALSE(fit.panels_fill());
  // A step's text growing line by line (answers, then checks appearing) follows it every time.
  StripFit growing;
  strip = 180;
  for (int frame = 0; frame < 20; ++frame) {
    const float fitted = growing.next(strip_measure(strip, 200 + 10.0f * frame, 100));
    if (fitted > 0) strip = fitted;
  }
  EXPECT_FLOAT_EQ(strip, 390);
  EXPECT_EQ(growing.refits(), 20);
  EXPECT_EQ(growing.turns(), 0);
}

TEST(CodeWrap, ALineThatFitsIsKeptAndALongOneBreaksAfterPunctuationIndented) {
  EXPECT_EQ(wrap_code_lines("x = 1\n\ny = 2", 20),
            (std::vector<std::string>{"x = 1", "", "y = 2"}));
  const auto lines = wrap_code_lines("    scaled_loss = loss / strategy.num_replicas_in_sync", 30);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines, (std::vector<std::string>{"    scaled_loss = loss /", "        strategy.",
                                             "        num_replicas_in_sync"}));
  // A word longer than the room is cut at the edge, and nothing is lost.
  const auto cut = wrap_code_lines("abcdefghijklmnopqrstuvwxyz", 10);
  std::string all;
  for (const std::string& line : cut) {
    EXPECT_LE(line.size(), 10u) << line;
    all += line.substr(line.find_first_not_of(' '));
  }
  EXPECT_EQ(all, "abcdefghijklmnopqrstuvwxyz");
}

// ImGui's own wrapping breaks after '.': ours only at spaces, and a number keeps its unit.
TEST(WrappedText, PiecesBreakAtSpacesOnlyAndANumberKeepsItsUnit) {
  const auto pieces = wrap_pieces("took 0.126 ms, then 13 images/s; 3 of them");
  EXPECT_EQ(pieces, (std::vector<std::string_view>{"took ", "0.126 ms, ", "then ", "13 images/s; ",
                                                   "3 ", "of ", "them"}));
  EXPECT_EQ(wrap_pieces(""), std::vector<std::string_view>{});
  EXPECT_EQ(wrap_pieces("/gpu:0 940584"), (std::vector<std::string_view>{"/gpu:0 ", "940584"}));
}

// What one frame of a window `width` x `height` pixels (ImGui's own font: 7 px a character, 17
// px a line) logged of what `draw` put in it, and how far down its items went.
struct LoggedFrame {
  std::string words;
  float bottom = 0;
};
template <class Draw>
LoggedFrame log_a_frame(float width, float height, const Draw& draw) {
  ImGuiContext* context = testing::make_windowless_context(ImVec2(800, 400));
  LoggedFrame result;
  for (int frame = 0; frame < 2; ++frame) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(width, height));
    ImGui::Begin("panel", nullptr, ImGuiWindowFlags_NoDecoration);
    ImGui::LogToBuffer();
    draw();
    result.words = GImGui->LogBuffer.c_str();
    ImGui::LogFinish();
    result.bottom = ImGui::GetCursorPosY();
    ImGui::End();
    ImGui::Render();
  }
  ImGui::DestroyContext(context);
  return result;
}

// A line of wrapped text that the window would show only in part (its lower half below the
// edge) is left out, and its room kept: half a line of glyphs reads as noise on a projector.
TEST(WrappedText, ALineShownOnlyInPartIsLeftOutItsRoomKept) {
  // Five words of 5 characters to a line of 184 px: "kkkk" starts the third line, at 42 px.
  const auto text = [] {
    text_wrapped("aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll");
  };
  const LoggedFrame tall = log_a_frame(200, 200, text), cut = log_a_frame(200, 48, text);
  EXPECT_NE(tall.words.find("kkkk"), std::string::npos) << tall.words;
  EXPECT_NE(cut.words.find("jjjj"), std::string::npos) << "the second line is whole: " << cut.words;
  EXPECT_EQ(cut.words.find("kkkk"), std::string::npos) << "the third is not: " << cut.words;
  EXPECT_EQ(cut.bottom, tall.bottom);
}

// A chart of more points than it has pixels draws about one per pixel, and always the last: a
// run of 1000 steps in a 200 px chart (about 140 px of plot: every 7th point) ended its curve at
// step 994, short of the step line above it.
TEST(Chart, ASeriesLongerThanTheChartIsWideEndsAtItsLastPoint) {
  ChartSeries each{"each step", rgb(0x808080), {}, {}, false};
  for (int i = 0; i < 1000; ++i) {
    each.x.push_back(i);
    each.y.push_back(0.1 * (i % 7));  // step 994 is 0, the last (999) 0.5
  }
  ChartSeries none{"none", rgb(0x808080), {}, {}, false};
  std::vector<double> ends;
  int drawn = 0;
  log_a_frame(260, 200, [&] {
    drawn = draw_chart("c", {each, none}, ChartOptions{}, 200, 150, &ends);
  });
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_DOUBLE_EQ(ends[0], 0.1 * (999 % 7));
  EXPECT_TRUE(std::isnan(ends[1])) << "a series with no points drew none";
  EXPECT_GT(drawn, 100);  // about a segment per pixel of the plot, not 999
  EXPECT_LT(drawn, 260);
}

// A chart given too little height (a small Training panel's two charts one above the other, each
// legend wrapped onto three lines) drew its y axis's labels one over another ("0" on "1.05"); it
// keeps three lines of plot under its legend however many lines the legend takes.
TEST(Chart, ThePlotKeepsThreeLinesUnderALegendOfAnyLength) {
  const std::vector<ChartSeries> series{{"each step", rgb(0x808080), {0, 1}, {1, 2}, false},
                                        {"train, smoothed", rgb(0x808080), {0, 1}, {1, 2}, false},
                                        {"test", rgb(0x808080), {0, 1}, {1, 2}, false}};
  const float line = 13;  // the default font's line
  ChartOptions o;
  o.y_label = "loss";
  const auto height = [&](float width) {
    return log_a_frame(width + 16, 400, [&] { draw_chart("c", series, o, width, 40); }).bottom;
  };
  const float wide = height(600), narrow = height(150);  // the legend on one line, on four
  EXPECT_GE(wide, 1.3f * line + 3 * line + 2.1f * line);
  EXPECT_GE(narrow, wide + 2 * line);
}

// A lesson's text breaks a line before a word and the run that follows it with no space between
// ("(" then `CollectiveAllReduce`), not between the two; nor between three such runs.
TEST(LessonText, ALineBreaksBeforeWordsThatTouchAcrossRuns) {
  // `a` letters, " (", then `code` in code, then ") end": the words ImGui logged (with a space
  // between the items of a line) in a panel of 184 px, 7 px a character.
  const auto drawn = [](int a, const std::string& code) {
    const std::vector<lessons::Paragraph> text{
        {lessons::ParagraphKind::kParagraph,
         {{std::string(a, 'a') + " (", lessons::RunStyle::kPlain},
          {code, lessons::RunStyle::kCode},
          {") end", lessons::RunStyle::kPlain}}}};
    return log_a_frame(200, 200, [&] { draw_paragraphs(text, TextFonts{}); }).words;
  };
  const std::string two = drawn(23, "bbbb");
  EXPECT_NE(two.find(std::string(23, 'a') + " \n( bbbb )"), std::string::npos) << two;
  // "(" and "bbb" fit the line (up to 182 px), the ")" after them would not: the three go to the
  // next line together.
  const std::string three = drawn(21, "bbb");
  EXPECT_NE(three.find(std::string(21, 'a') + " \n( bbb )"), std::string::npos) << three;
}

// One ImGui frame without a window system: a panel `width` pixels wide with what `draw` puts in
// it, audited with and without the words ImGui logged.
struct AuditedFrame {
  TextAudit with_words, without_words;
};
constexpr const char* kDejaVuSans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
template <class Draw>
AuditedFrame audit_a_frame(float width, const Draw& draw) {
  // The window's font (the audit tells a space by the gap it leaves in DejaVu Sans).
  ImGuiContext* context = testing::make_windowless_context(ImVec2(800, 400), kDejaVuSans, 24.0f);
  ImGuiIO& io = ImGui::GetIO();
  AuditedFrame result;
  for (int frame = 0; frame < 2; ++frame) {  // tab bars lay out in their second frame
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(width, 300));
    ImGui::Begin("panel", nullptr, ImGuiWindowFlags_NoDecoration);
    ImGui::LogToBuffer();
    draw();
    const std::string words = GImGui->LogBuffer.c_str();
    ImGui::LogFinish();
    ImGui::End();
    ImGui::Render();
    result.with_words = audit_text(*ImGui::GetDrawData(), *io.Fonts, words);
    result.without_words = audit_text(*ImGui::GetDrawData(), *io.Fonts);
  }
  ImGui::DestroyContext(context);
  return result;
}

// The height a window needs: its padding and items, a wish said inside pushed IDs (a tab, a
// table) added for that frame only, and all of it for a child that fills whatever is left.
TEST(ContentHeight, AWindowNeedsItsItemsAndWhatTheyWishedThisFrame) {
  ImGuiContext* context = testing::make_windowless_context(ImVec2(800, 400));
  ImGuiIO& io = ImGui::GetIO();
  const ImGuiStyle& style = ImGui::GetStyle();
  bool filled = false;
  float most = 0;
  const auto measure = [&](float wish, bool fill, bool picture = false, float up_to = 0) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(400, 300));
    ImGui::Begin("panel", nullptr, ImGuiWindowFlags_NoDecoration);
    for (const char* line : {"one", "two", "three"}) ImGui::TextUnformatted(line);
    ImGui::PushID("a table");
    wants_more_height(wish);
    ImGui::PopID();
    if (fill) {
      ImGui::BeginChild("fills", ImVec2(0, 0));
      ImGui::EndChild();
    }
    if (picture) fills_room();
    if (up_to > 0) fills_room_up_to(up_to);
    const float need = content_height();
    filled = filling_room();
    most = most_room_filled();
    ImGui::End();
    ImGui::Render();
    return need;
  };
  const float lines = 3 * io.Fonts->Fonts[0]->FontSize + 2 * style.ItemSpacing.y;
  EXPECT_FLOAT_EQ(measure(0, false), lines + 2 * style.WindowPadding.y);
  EXPECT_FLOAT_EQ(measure(50, false), lines + 2 * style.WindowPadding.y + 50);
  EXPECT_FLOAT_EQ(measure(-20, false), lines + 2 * style.WindowPadding.y) << "no wish below 0";
  EXPECT_FLOAT_EQ(measure(0, false), lines + 2 * style.WindowPadding.y) << "last frame's wish";
  EXPECT_FLOAT_EQ(measure(0, true), 300) << "a child of height 0 takes what is left";
  EXPECT_FALSE(filled);
  EXPECT_FLOAT_EQ(measure(0, false, true), lines + 2 * style.WindowPadding.y);
  EXPECT_TRUE(filled) << "a picture sized to its room says so";
  EXPECT_EQ(most, 0) << "any room it gets";
  measure(0, false);
  EXPECT_FALSE(filled) << "for its frame only";
  // A picture at its largest fills its room up to a most.
  measure(0, false, false, 250);
  EXPECT_TRUE(filled);
  EXPECT_EQ(most, 250);
  measure(0, false, true);
  EXPECT_EQ(most, 0) << "for its frame only";
  // With a title bar and scrolled down: the same items, the title bar's height more.
  float titled = 0;
  for (int frame = 0; frame < 3; ++frame) {  // scrolled once its content is known
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(400, 120));
    if (frame > 0) ImGui::SetNextWindowScroll(ImVec2(0, 40));
    ImGui::Begin("titled");
    for (int i = 0; i < 12; ++i) ImGui::Text("line %d", i);
    EXPECT_EQ(ImGui::GetScrollY(), frame > 0 ? 40.0f : 0.0f);
    titled = content_height();
    ImGui::End();
    ImGui::Render();
  }
  EXPECT_FLOAT_EQ(titled, ImGui::GetFrameHeight() + 2 * style.WindowPadding.y +
                              12 * io.Fonts->Fonts[0]->FontSize + 11 * style.ItemSpacing.y);
  ImGui::DestroyContext(context);
}

// A picture of the recorded step fills its room from before its first data on, but not while a
// lesson's step waits for the class's predictions: then it has a sentence to show, and the
// presenter strip may take the rest of its room for the step's text.
TEST(StepMoment, APictureWithNoStepYetLendsItsRoomOnlyWhileALessonAsks) {
  ImGuiContext* context = testing::make_windowless_context(ImVec2(800, 400));
  const core::SessionSnapshot run;  // no step recorded yet
  const core::SessionConfig config;
  const std::string no_error;
  ViewSettings view;
  GuiReport report;
  testing::NoActions actions;
  const auto fills = [&](bool lesson_asks) {
    view.lesson_asks = lesson_asks;
    ImGui::NewFrame();
    ImGui::Begin("panel");
    FrameContext frame{run, nullptr, config, no_error, view, report, actions};
    EXPECT_FALSE(has_recorded_step(frame, "The global batch"));
    const bool filling = filling_room();
    ImGui::End();
    ImGui::Render();
    return filling;
  };
  EXPECT_TRUE(fills(false));
  EXPECT_FALSE(fills(true));
  EXPECT_TRUE(fills(false));
  ImGui::DestroyContext(context);
}

// While a lesson's step asks a device's memory limit, the Devices panel shows "?" for it: in its
// rows and in the tooltip of each memory bar (which had named the limit on hover). The pointer
// sweeps the panel; the tooltips' words are what ImGui logged while it did, and the cards' words
// those of a frame with the pointer away.
TEST(DevicesPanel, WhileAStepAsksTheLimitNoTooltipNamesIt) {
  ImGuiContext* context = testing::make_windowless_context(ImVec2(800, 300));
  core::SessionConfig config;  // 2 CPU-backed devices of 1024 MiB, not yet started
  config.settings.model = core::ModelKind::kMlp;
  config.settings.train_examples = 256;
  core::TrainingSession session(
      std::make_shared<core::FashionMnist>(
          core::FashionMnist{core::synthetic_dataset(256, 3), core::synthetic_dataset(64, 9)}),
      config);
  core::SessionSnapshot run;
  session.update(run);
  ASSERT_EQ(run.devices.size(), 2u);
  const std::string no_error;
  GuiReport report;
  testing::NoActions actions;
  // One frame of the panel with the pointer at `mouse`: the words ImGui logged (to its clipboard:
  // a tooltip's End finishes the log, which empties a buffer but leaves the clipboard its words).
  const auto frame_words = [&](DevicesPanel& panel, bool asks, ImVec2 mouse) {
    ViewSettings view;
    view.lesson_asks = asks;
    if (asks) view.asked_values = {"memory_limit_mib"};
    ImGui::GetIO().MousePos = mouse;
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(800, 300));
    ImGui::Begin("Devices");
    ImGui::LogToClipboard();
    FrameContext frame{run, &session, config, no_error, view, report, actions};
    panel.Draw(frame);
    ImGui::LogFinish();
    const std::string words = ImGui::GetClipboardText();
    ImGui::End();
    ImGui::Render();
    return words;
  };
  const auto tooltips = [&](bool asks) {
    DevicesPanel panel;
    std::string said;
    for (float y = 2; y < 300; y += 3) {
      for (float x : {100.0f, 300.0f, 500.0f, 700.0f}) {
        const std::string words = frame_words(panel, asks, ImVec2(x, y));
        if (words.find("(bar)") != std::string::npos) said += words + "\n";
      }
    }
    return said;
  };
  const std::string shown = tooltips(false);
  ASSERT_NE(shown.find("limit 1024 MiB (bar)"), std::string::npos) << "no bar's tooltip came";
  const std::string asked = tooltips(true);
  ASSERT_NE(asked.find("(bar)"), std::string::npos) << "no bar's tooltip came";
  EXPECT_NE(asked.find("limit ? MiB (bar)"), std::string::npos) << asked;
  EXPECT_EQ(asked.find("1024"), std::string::npos) << asked;
  // A tooltip's words end the log at the bar hovered: the whole panel's, the pointer away, are
  // read in a frame of their own (what comes after the bars too).
  DevicesPanel panel;
  const std::string rows = frame_words(panel, false, ImVec2(-100, -100)),
                    asked_rows = frame_words(panel, true, ImVec2(-100, -100));
  EXPECT_NE(rows.find("limit 1024 MiB"), std::string::npos) << rows;
  EXPECT_NE(asked_rows.find("limit ? MiB"), std::string::npos) << asked_rows;
  EXPECT_EQ(asked_rows.find("1024"), std::string::npos) << asked_rows;
  ImGui::DestroyContext(context);
}

// `--press` names keys as its help does, case and spaces aside; a name it does not know is
// refused saying which, and where in a long list (not the list again: it may be thousands long),
// a long name cut at a whole character.
TEST(PressedKeys, KeysByNameAndARefusalThatSaysWhichAndWhere) {
  EXPECT_EQ(pressed_keys("Space, pgdn,0,RIGHT"),
            (std::vector<int>{GLFW_KEY_SPACE, GLFW_KEY_PAGE_DOWN, GLFW_KEY_0, GLFW_KEY_RIGHT}));
  const auto refusal = [](const std::string& list) {
    try {
      pressed_keys(list);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("space,fire").find("space,fire: no key named 'fire'"), std::string::npos);
  std::string many;
  for (int i = 0; i < 2999; ++i) many += "space,";
  const std::string long_name = std::string(39, 'x') + "\xc3\xa9\xc3\xa9";  // 39 x, then "éé"
  const std::string said = refusal(many + long_name + ",space");
  EXPECT_NE(said.find("key 3000 of the list: no key named '" + std::string(39, 'x') + "...'"),
            std::string::npos)
      << said;
  EXPECT_LT(said.size(), 300u) << said;
  EXPECT_NE(refusal("space,,pgdn").find("an empty key name between commas"), std::string::npos);
}

// A checkbox, a tab bar and a sentence too long for a narrow panel.
AuditedFrame audit_a_panel(float width) {
  return audit_a_frame(width, [] {
    bool pausing = false;
    ImGui::Checkbox("pause at every phase", &pausing);
    if (ImGui::BeginTabBar("tabs")) {
      if (ImGui::BeginTabItem("Measured here")) ImGui::EndTabItem();
      if (ImGui::BeginTabItem("Predicted on a machine")) ImGui::EndTabItem();
      ImGui::EndTabBar();
    }
    ImGui::TextUnformatted("Settings (Apply restarts the run)");
  });
}

std::string lines_of(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}

// ImGui leaves out a glyph wholly past its clip edge and ends a tab's label that does not fit
// with "...": no glyph is cut, so only the logged words tell that the line goes on. Where the
// panel is wide enough nothing is said.
TEST(TextAudit, ALineStoppedAtItsEdgeOrEndedWithDotsIsCutWhereTheWordsGoOn) {
  if (!std::filesystem::exists(kDejaVuSans)) GTEST_SKIP() << kDejaVuSans << " not installed";
  const AuditedFrame narrow = audit_a_panel(200);
  const std::string cut = lines_of(narrow.with_words.cut);
  EXPECT_GE(narrow.with_words.cut.size(), 3u) << cut;
  EXPECT_NE(cut.find("pause at"), std::string::npos) << cut;
  EXPECT_NE(cut.find("..."), std::string::npos) << cut;  // the tabs
  EXPECT_NE(cut.find("Settings (Apply"), std::string::npos) << cut;
  EXPECT_LT(narrow.without_words.cut.size(), narrow.with_words.cut.size());
  const AuditedFrame wide = audit_a_panel(700);
  EXPECT_GT(wide.with_words.glyphs, 0);
  EXPECT_TRUE(wide.with_words.cut.empty()) << wide.with_words.cut.front();
}

// Two labels drawn side by side in boxes of their own, the second ending at the panel's edge, as
// the Timeline labels its spans: whole, though a legend logs the same words with more after them.
// Drawn with no box between them they are one line of text, which the legend says goes on.
// A line the window shows only in part, at its bottom edge (lesson 4 step 1's "Answer: 1" under
// a two-line question at 1280x720), is found; wrapped text leaves that line out and is not.
TEST(TextAudit, ALineShownOnlyInPartAtTheEdgeIsFound) {
  // Lines of 24 px DejaVu Sans (a line and its spacing: 28 px) from 8 px down a window of 300 px:
  // the eleventh, at 288 px, has 12 of its 24 px in view.
  const auto lines = [](bool wrapped) {
    return [wrapped] {
      for (int k = 1; k <= 12; ++k) {
        const std::string line = "line " + std::to_string(k);
        if (wrapped) {
          text_wrapped("%s", line.c_str());
        } else {
          ImGui::TextUnformatted(line.c_str());
        }
      }
    };
  };
  const AuditedFrame plain = audit_a_frame(400, lines(false));
  EXPECT_EQ(lines_of(plain.without_words.in_part), "line 11\n");
  const AuditedFrame wrapped = audit_a_frame(400, lines(true));
  EXPECT_GT(wrapped.without_words.glyphs, 0);
  EXPECT_TRUE(wrapped.without_words.in_part.empty()) << lines_of(wrapped.without_words.in_part);
}

TEST(TextAudit, LabelsInBoxesOfTheirOwnAreJudgedOneByOne) {
  if (!std::filesystem::exists(kDejaVuSans)) GTEST_SKIP() << kDejaVuSans << " not installed";
  const auto spans = [](bool boxes) {
    return [boxes] {
      ImGui::TextUnformatted("forward backward all-reduce update");  // the legend
      ImDrawList* draw = ImGui::GetWindowDrawList();
      const float edge = draw->GetClipRectMax().x;
      const float y = ImGui::GetCursorScreenPos().y;
      const float second = edge - ImGui::CalcTextSize("backward").x - 2;
      const float first = second - 8 - ImGui::CalcTextSize("forward").x;
      const ImU32 white = IM_COL32(255, 255, 255, 255), blue = IM_COL32(60, 110, 170, 255);
      if (boxes) draw->AddRectFilled(ImVec2(first - 3, y), ImVec2(second - 4, y + 30), blue);
      draw->AddText(ImVec2(first, y), white, "forward");
      if (boxes) draw->AddRectFilled(ImVec2(second - 3, y), ImVec2(edge, y + 30), blue);
      draw->AddText(ImVec2(second, y), white, "backward");
      ImGui::LogText("forward\nbackward\n");  // as the Timeline logs its labels
      ImGui::Dummy(ImVec2(10, 30));
    };
  };
  const AuditedFrame boxed = audit_a_frame(500, spans(true));
  EXPECT_GT(boxed.with_words.glyphs, 0);
  EXPECT_TRUE(boxed.with_words.cut.empty()) << lines_of(boxed.with_words.cut);
  const AuditedFrame run_together = audit_a_frame(500, spans(false));
  EXPECT_EQ(lines_of(run_together.with_words.cut), "forward backward\n");
}

// A legend label wider than its chart (the usual layout's Training panel at 1280x720, font 1.5,
// cut "train, smoothed" by a letter) breaks between its words onto a second line; a label that
// fits stays on one.
TEST(Chart, ALegendLabelWiderThanTheChartBreaksBetweenItsWords) {
  const std::vector<ChartSeries> series{{"each step", rgb(0x808080), {0, 1}, {1, 2}, false},
                                        {"train, smoothed", rgb(0x808080), {0, 1}, {1, 2}, false}};
  ChartOptions o;
  o.y_label = "loss";
  const auto drawn = [&](float width) {
    return audit_a_frame(width + 16, [&] { draw_chart("c", series, o, width, 40); }).with_words;
  };
  for (const float width : {150.0f, 175.0f, 200.0f, 600.0f}) {  // 24 px DejaVu Sans
    const TextAudit audit = drawn(width);
    EXPECT_GT(audit.glyphs, 0);
    EXPECT_TRUE(audit.cut.empty()) << width << " px: " << lines_of(audit.cut);
  }
  const auto says = [](float width, const std::string& words) {
    return log_a_frame(width + 16, 300,
                       [&] {
                         draw_chart("c", {{words, rgb(0x808080), {}, {}, false}}, ChartOptions{},
                                    width, 40);
                       })
        .words;
  };
  EXPECT_NE(says(600, "train, smoothed").find("train, smoothed"), std::string::npos);
  EXPECT_NE(says(60, "train, smoothed").find("train,\nsmoothed"), std::string::npos)
      << says(60, "train, smoothed");
}

#ifdef MIRRORLAB_HAVE_LESSONS
// A lesson's `look_at` is checked against lessons::panel_names() when the file is read: it must
// name exactly the window's panels (the Controls and the Lesson panel beside those laid out).
TEST(PanelLayout, TheLessonFilesNameExactlyTheWindowsPanels) {
  std::set<std::string> window = {"Controls", "Lesson"};
  for (const std::string& name : panel_names()) window.insert(name);
  const auto& lessons = lessons::panel_names();
  EXPECT_EQ(std::set<std::string>(lessons.begin(), lessons.end()), window);
  EXPECT_EQ(lessons.size(), window.size());  // and none twice
}

// The presenter strip's columns: the text's width follows what each column holds.
TEST(StripColumns, TheTextGetsTheWidthInProportionToWhatItHoldsWithinBounds) {
  EXPECT_FLOAT_EQ(strip_text_share(500, 500), 0.5f);
  EXPECT_FLOAT_EQ(strip_text_share(600, 400), 0.6f);
  EXPECT_FLOAT_EQ(strip_text_share(5000, 100), kMostTextShare);
  EXPECT_FLOAT_EQ(strip_text_share(100, 5000), kLeastTextShare);
  EXPECT_FLOAT_EQ(strip_text_share(0, 0), kMostTextShare);
  EXPECT_LT(kLeastTextShare, 0.5f);
  EXPECT_GT(kMostTextShare, 0.5f);
}

TEST(StripColumns, AStepThatAsksLittleGivesItsTextTheWidthAndOneThatAsksMuchTakesIt) {
  const auto step = [](const char* file, std::size_t index) {
    return lessons::load_lesson(lessons::default_lesson_folder() / file).steps.at(index);
  };
  // Lesson 10's last step: how to run it with mpirun, and the dataset's sharding; no question.
  const lessons::LessonStep quiet = step("10-several-machines.md", 3);
  ASSERT_TRUE(quiet.questions.empty());
  EXPECT_GT(text_characters(quiet), 1000u);
  EXPECT_FLOAT_EQ(strip_text_share(quiet), kMostTextShare);
  // Lesson 3's first step asks two questions, and explains each answer, after a short text.
  const lessons::LessonStep asking = step("03-global-batch.md", 0);
  ASSERT_GE(asking.questions.size(), 2u);
  EXPECT_GT(asked_characters(asking), text_characters(asking));
  EXPECT_LT(strip_text_share(asking), 0.5f);
  // Lesson 8's third step while the class predicts: two questions, their explanations and three
  // checks not shown yet, beside a long text, which gets the width they would take.
  const lessons::LessonStep predicting = step("08-computation-against-communication.md", 2);
  ASSERT_EQ(predicting.questions.size(), 2u);
  EXPECT_LT(asked_characters(predicting, true) * 5, asked_characters(predicting) * 3);
  EXPECT_GT(strip_text_share(predicting, true), strip_text_share(predicting) + 0.1f);
  EXPECT_GT(strip_text_share(predicting, true), 0.5f);
}
#endif

// A presenter's clicker (Page Down, Page Up) reads a step a page at a time, then runs it, then
// goes on; back a page, then a step.
TEST(Clicker, PageDownReadsWhatIsHiddenThenRunsTheStepThenGoesToTheNext) {
  const std::vector<ColumnScroll> hidden{{0, 300, 100}, {0, 0, 100}};
  const std::vector<ColumnScroll> read{{300, 300, 100}, {0, 0, 100}};
  ClickerState state{hidden, StepStage::kAsking, false, true, false};
  EXPECT_EQ(clicker_forward(state), ClickerMove::kPageDown);
  state.columns = read;
  EXPECT_EQ(clicker_forward(state), ClickerMove::kRunStep);
  state.stage = StepStage::kRunning;  // a second press must not skip the answers
  EXPECT_EQ(clicker_forward(state), ClickerMove::kNone);
  state.stage = StepStage::kDone;
  EXPECT_EQ(clicker_forward(state), ClickerMove::kNextStep);
  state.has_next = false;  // the lesson's end, read
  EXPECT_EQ(clicker_forward(state), ClickerMove::kNone);
  // The answers came in below what the column showed: they are read first.
  const std::vector<ColumnScroll> answered{{300, 300, 100}, {0, 40, 100}};
  state.columns = answered;
  EXPECT_EQ(clicker_forward(state), ClickerMove::kPageDown);
  // Less than a pixel from the end is the end.
  const std::vector<ColumnScroll> rounded{{299.5f, 300, 100}};
  state.columns = rounded;
  EXPECT_EQ(clicker_forward(state), ClickerMove::kNone);
}

TEST(Clicker, PageUpGoesBackAPageWhileScrolledThenAStepAndLeavesTheIntroduction) {
  const std::vector<ColumnScroll> scrolled{{0, 300, 100}, {120, 200, 100}};
  const std::vector<ColumnScroll> top{{0, 300, 100}, {0, 200, 100}};
  ClickerState state{scrolled, StepStage::kDone, false, true, true};
  EXPECT_EQ(clicker_back(state), ClickerMove::kPageUp);
  state.columns = top;
  EXPECT_EQ(clicker_back(state), ClickerMove::kBackStep);
  state.has_back = false;
  EXPECT_EQ(clicker_back(state), ClickerMove::kNone);
  state.introduction = true;  // read to its end or back at its top: the step again
  EXPECT_EQ(clicker_back(state), ClickerMove::kCloseIntroduction);
  const std::vector<ColumnScroll> intro_read{{300, 300, 100}};
  state.columns = intro_read;
  state.stage = StepStage::kAsking;
  EXPECT_EQ(clicker_forward(state), ClickerMove::kCloseIntroduction);
}

TEST(Clicker, APageIsWhatTheColumnShowsLessALineWithinItsEnds) {
  EXPECT_FLOAT_EQ(paged_scroll({0, 500, 100}, 1, 20), 80);
  EXPECT_FLOAT_EQ(paged_scroll({80, 500, 100}, 1, 20), 160);
  EXPECT_FLOAT_EQ(paged_scroll({460, 500, 100}, 1, 20), 500);
  EXPECT_FLOAT_EQ(paged_scroll({160, 500, 100}, -1, 20), 80);
  EXPECT_FLOAT_EQ(paged_scroll({50, 500, 100}, -1, 20), 0);
  // A column shorter than two lines still moves, by a line.
  EXPECT_FLOAT_EQ(paged_scroll({0, 500, 25}, 1, 20), 20);
  EXPECT_FLOAT_EQ(paged_scroll({0, 0, 100}, 1, 20), 0);
}

TEST(ScriptedRun, EachStepsFileNameHasTheStepsNumberWhereverItSaysStep) {
  EXPECT_EQ(path_for_step("shots/step-{step}.png", 3), "shots/step-3.png");
  EXPECT_EQ(path_for_step("{step}/report-{step}.json", 12), "12/report-12.json");
  EXPECT_EQ(path_for_step("report.json", 2), "report.json");
  EXPECT_EQ(path_for_step("", 2), "");
}

TEST(ScriptedRun, AWindowWithNoScriptOptionsIsInteractive) {
  AppOptions options;
  options.steps = 5;  // asks for steps first, but no picture, report or measurement
  EXPECT_FALSE(ScriptedRun(options).active());
  options.screenshot = "out.png";
  EXPECT_TRUE(ScriptedRun(options).active());
}

TEST(ScriptedRun, WithNothingToTrainAScreenshotIsTakenAfterItsFrames) {
  AppOptions options;
  options.screenshot = "out.png";
  options.frames = 3;
  ScriptedRun script(options);
  core::SessionSnapshot run;
  FrameStats stats;
  GuiReport report;
  EXPECT_EQ(script.after_frame(0.1, run, nullptr, stats, report), ScriptStep::kGoOn);
  EXPECT_EQ(script.after_frame(0.2, run, nullptr, stats, report), ScriptStep::kGoOn);
  EXPECT_EQ(script.after_frame(0.3, run, nullptr, stats, report), ScriptStep::kScreenshotThenDone);
  EXPECT_EQ(script.finish(run, "", false), 0);
  EXPECT_EQ(script.finish(run, "", true), 1);  // the screenshot could not be written
}

TEST(ScriptedRun, AScriptPastItsTimeoutStopsAndFails) {
  AppOptions options;
  options.report = "report.json";
  options.script_timeout_seconds = 5;
  ScriptedRun script(options);
  core::SessionSnapshot run;
  FrameStats stats;
  GuiReport report;
  EXPECT_EQ(script.after_frame(5.5, run, nullptr, stats, report), ScriptStep::kDone);
  EXPECT_EQ(script.finish(run, "", false), 1);
}

TEST(ScriptedRun, AScriptThatAskedForStepsFailsWhenNoSessionCouldBeBuilt) {
  AppOptions options;
  options.report = "report.json";
  options.steps = 3;
  ScriptedRun script(options);
  core::SessionSnapshot run;
  EXPECT_EQ(script.finish(run, "out of memory on /gpu:0", false), 1);
  options.steps = 0;  // only a picture of the error: that is what was asked
  EXPECT_EQ(ScriptedRun(options).finish(run, "out of memory on /gpu:0", false), 0);
}

TEST(FrameStats, MeasuresTheTimeBetweenFramesAndStartsOverOnRestart) {
  FrameStats stats;
  stats.frame_started(1.0);
  stats.frame_started(1.5);
  stats.frame_started(2.5);
  stats.frames_drawn = 2;
  stats.draw_calls = 7;
  ASSERT_EQ(stats.frame_seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(stats.frame_seconds[1], 1.0);
  stats.restart();
  EXPECT_TRUE(stats.frame_seconds.empty());
  EXPECT_EQ(stats.frames_drawn, 0);
  EXPECT_EQ(stats.draw_calls, 7);  // the last frame's, until the next is drawn
  stats.frame_started(9.0);        // the first frame after a restart has no interval
  EXPECT_TRUE(stats.frame_seconds.empty());
}

}  // namespace
}  // namespace mirrorlab::gui
