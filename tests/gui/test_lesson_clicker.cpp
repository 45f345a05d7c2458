// The Lesson panel in the presenter's caption strip, driven as a clicker drives it (Page Down,
// Page Up), in one ImGui context without a window system: a step too long for its strip is read
// a page at a time, then run, then left for the next; Page Up goes back. The clicker's decisions
// alone are in test_gui (Clicker.*); here the real panel lays out, scrolls and plays its run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "core/io/synthetic_dataset.h"
#include "gui/model/view_settings.h"
#include "gui/panels/lesson/lesson_panel.h"
#include "imgui.h"
#include "imgui_internal.h"
#include "nlohmann/json.hpp"
#include "tests/gui/imgui_test_support.h"

namespace mirrorlab::gui {
namespace {

namespace fs = std::filesystem;

// A step whose text is far longer than the strip, asking one question; then another as long.
std::string long_lesson() {
  std::string text;
  for (int i = 1; i <= 14; ++i) {
    text += "Paragraph " + std::to_string(i) +
            " of the step's text, long enough to wrap onto a second line in the strip's column of "
            "a narrow window.\n\n";
  }
  return "# A long step\n\n```toml\nid = \"long-step\"\nminutes = 2\n```\n\nThe introduction.\n\n"
         "## Read it all\n\n" +
         text +
         "```toml\nlook_at = \"Batch split\"\ndo = [{ pause_at = \"after-split\" }]\n\n"
         "[setup]\ngpus = 2\nmodel = \"mlp\"\nbatch_per_replica = 32\ntrain_examples = 640\n\n"
         "[[question]]\nask = \"How many examples of this global batch does /gpu:1 get?\"\n"
         "answer = \"shard_examples\"\nreplica = 1\n"
         "explain = \"A global batch of 64 is cut into 2 shards of 32, one per replica.\"\n\n"
         "[[check]]\nthat = \"global_batch\"\nequals = 64\nsays = \"the global batch is 64\"\n"
         "```\n\n## The next step\n\n" +
         text + "```toml\nlook_at = \"Batch split\"\ndo = [{ pause_at = \"after-split\" }]\n```\n";
}

// A first step that shows whole in the strip, asking nothing, then a long one that asks.
std::string short_then_long() {
  const std::string lesson = long_lesson();
  const std::size_t long_step = lesson.find("## Read it all");
  return lesson.substr(0, long_step) +
         "## A short step\n\nOne line.\n\n```toml\nlook_at = \"Batch split\"\n"
         "do = [{ run_steps = 1 }]\n\n[setup]\ngpus = 2\nmodel = \"mlp\"\n"
         "batch_per_replica = 32\ntrain_examples = 640\n```\n\n" +
         lesson.substr(long_step);
}

class LessonClicker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mirrorlab-clicker-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    context_ = testing::make_windowless_context(ImVec2(1000, 400));
    view_.present = true;
    open(long_lesson());
  }
  void open(const std::string& lesson) {
    const fs::path file = dir_ / "lesson.md";
    std::ofstream(file) << lesson;
    auto data = std::make_shared<core::FashionMnist>(
        core::FashionMnist{core::synthetic_dataset(2048, 3), core::synthetic_dataset(64, 9)});
    panel_.reset();
    panel_ = make_lesson_panel(file.string(), 1, LessonPace::kClass, data, core::SessionConfig{});
  }
  void TearDown() override {
    panel_.reset();  // stops its run first
    if (context_ != nullptr) ImGui::DestroyContext(context_);
    fs::remove_all(dir_);
  }

  // Frames as the window draws them: the strip 1000 x `height` pixels.
  void frames(int n, float height = 160) {
    for (int i = 0; i < n; ++i) {
      ImGui::GetIO().DeltaTime = 1.0f / 60;
      ImGui::NewFrame();
      panel_->advance(view_);
      ImGui::SetNextWindowPos(ImVec2(0, 240));
      ImGui::SetNextWindowSize(ImVec2(1000, height));
      ImGui::Begin("Lesson", nullptr, ImGuiWindowFlags_NoDecoration);
      FrameContext frame{snapshot_, panel_->session(), panel_->config(), panel_->setup_error(),
                         view_,     report_,           actions_};
      panel_->Draw(frame);
      ImGui::End();
      ImGui::Render();
    }
  }
  // Frames until the step's run is done (the panel waits for nothing).
  bool run_until_idle() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < end) {
      frames(1);
      if (!panel_->busy()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  double drew(const char* what) const {
    const nlohmann::json lesson = nlohmann::json::parse(report_.to_json())["panels"]["Lesson"];
    return lesson.contains(what) ? lesson[what].get<double>() : -1;
  }

  fs::path dir_;
  std::unique_ptr<LessonPanel> panel_;
  ImGuiContext* context_ = nullptr;
  ViewSettings view_;
  GuiReport report_;
  testing::NoActions actions_;
  core::SessionSnapshot snapshot_;
};

TEST_F(LessonClicker, PageDownReadsTheStepAPageAtATimeThenRunsItThenGoesToTheNext) {
  frames(3);
  ASSERT_EQ(panel_->step_number(), 1);
  ASSERT_GT(drew("text_hidden_below_px"), 200) << "the step must be longer than its strip";
  EXPECT_GE(drew("columns_showing_more"), 1);
  EXPECT_EQ(drew("text_scrolled_px"), 0);

  // Each press a page further, the step still waiting for predictions, until all is read.
  int pages = 0;
  double scrolled = 0;
  while (drew("columns_showing_more") > 0 && pages < 40) {
    panel_->page_down();
    frames(2);
    ++pages;
    EXPECT_GT(drew("text_scrolled_px") + drew("asked_scrolled_px"), scrolled) << "page " << pages;
    scrolled = drew("text_scrolled_px") + drew("asked_scrolled_px");
    EXPECT_EQ(panel_->step_number(), 1);
    EXPECT_TRUE(panel_->busy()) << "the questions still wait";
  }
  EXPECT_EQ(drew("columns_showing_more"), 0);
  EXPECT_GE(pages, 2);
  EXPECT_EQ(drew("text_scrolled_px"), drew("text_hidden_below_px"));
  EXPECT_EQ(drew("checks_passed"), -1) << "nothing has run yet";

  // The next press runs the step; one more while it runs skips nothing.
  panel_->page_down();
  frames(1);
  panel_->page_down();
  ASSERT_TRUE(run_until_idle());
  EXPECT_EQ(panel_->step_number(), 1);
  EXPECT_EQ(drew("checks_passed"), 1);
  // The answers replaced the questions at the top of their column: read from there again.
  frames(1);
  EXPECT_EQ(drew("asked_scrolled_px"), 0);

  // Then what the answers added below, and then the next step, from its top.
  int presses = 0;
  while (panel_->step_number() == 1 && presses < 20) {
    panel_->page_down();
    frames(2);
    ++presses;
  }
  EXPECT_EQ(panel_->step_number(), 2);
  frames(3);
  EXPECT_EQ(drew("step"), 2);
  EXPECT_EQ(drew("text_scrolled_px"), 0);

  // Page Up from the top of a step is the step before, read from its top again.
  panel_->page_up();
  frames(3);
  EXPECT_EQ(drew("step"), 1);
  EXPECT_EQ(drew("text_scrolled_px"), 0);
  // Scrolled down a page, Page Up goes back up the page, not to the step before.
  panel_->page_down();
  frames(2);
  EXPECT_GT(drew("text_scrolled_px"), 0);
  panel_->page_up();
  frames(2);
  EXPECT_EQ(drew("text_scrolled_px"), 0);
  EXPECT_EQ(drew("step"), 1);
}

// A column that hides more below keeps a row under it for its "more" tab, so the tab covers
// none of the column's lines; clicked, the tab pages that column down as Page Down does.
TEST_F(LessonClicker, TheMoreTabSitsBelowItsColumnAndPagesIt) {
  frames(3);
  ASSERT_GE(drew("columns_showing_more"), 1);
  // The strip's text column: a child window of the Lesson window.
  const ImGuiWindow* text = nullptr;
  for (const ImGuiWindow* w : GImGui->Windows) {
    if (std::string(w->Name).find("##text") != std::string::npos) text = w;
  }
  ASSERT_NE(text, nullptr);
  const float strip_bottom = 240 + 160 - ImGui::GetStyle().WindowPadding.y;
  const float tab = ImGui::GetFontSize() * 1.25f;
  EXPECT_LE(text->Rect().Max.y, strip_bottom - tab + 0.5f) << "the column leaves the tab's row";
  EXPECT_EQ(drew("text_scrolled_px"), 0);
  // A click on the tab, at the lower right corner of the text column's row.
  ImGui::GetIO().MousePos = ImVec2(text->Rect().Max.x - 4, strip_bottom - tab * 0.5f);
  ImGui::GetIO().MouseDown[0] = true;
  frames(1);
  ImGui::GetIO().MouseDown[0] = false;
  frames(2);
  EXPECT_GT(drew("text_scrolled_px"), 0) << "the tab pages its column";
  EXPECT_EQ(drew("asked_scrolled_px"), 0) << "and only its own";
  EXPECT_EQ(drew("step"), 1);
  EXPECT_EQ(drew("checks_passed"), -1) << "the questions still wait: nothing ran";
}

// The text column wraps at one width whether it scrolls or shows all: a scroll bar that came
// would narrow it, wrap it to more lines and so keep itself (a step that would show whole
// without it, 20 px short with it).
TEST_F(LessonClicker, TheTextColumnKeepsItsWidthWithOrWithoutAScrollBar) {
  const auto text_width = [] {
    for (const ImGuiWindow* w : GImGui->Windows) {
      if (std::string(w->Name).find("##text") != std::string::npos) return w->WorkRect.GetWidth();
    }
    return -1.0f;
  };
  frames(3);
  ASSERT_GT(drew("text_hidden_below_px"), 0);
  const float scrolling = text_width();
  frames(3, 2400);
  ASSERT_EQ(drew("text_hidden_below_px"), 0) << "the whole step shows";
  EXPECT_EQ(text_width(), scrolling);
}

// A press in the very frame after a step changed is judged on what the new step holds, not on
// what the step before held (ImGui's scroll range lags a frame): after a short step, the long
// step's first press pages it rather than running it unread.
TEST_F(LessonClicker, APressRightAfterTheStepChangedReadsTheNewStep) {
  open(short_then_long());
  frames(3);
  ASSERT_EQ(panel_->step_number(), 1);
  ASSERT_TRUE(run_until_idle()) << "a step that asks nothing runs at once";
  frames(2);
  ASSERT_EQ(drew("columns_showing_more"), 0) << "the short step must show whole";
  panel_->page_down();  // to the long step
  frames(1);            // drawn once
  ASSERT_EQ(panel_->step_number(), 2);
  panel_->page_down();
  frames(2);
  EXPECT_TRUE(panel_->busy()) << "the long step still asks";
  EXPECT_EQ(drew("checks_passed"), -1) << "nothing has run";
  EXPECT_GT(drew("text_scrolled_px"), 0) << "the press paged the long step";
}

// F5 between the layouts: the strip's columns and the usual layout's window are other windows,
// and a step is read from its top in the other layout, whatever was scrolled in this one.
TEST_F(LessonClicker, TheOtherLayoutReadsTheStepFromItsTop) {
  frames(3);
  panel_->page_down();
  frames(2);
  ASSERT_GT(drew("text_scrolled_px"), 0);
  view_.present = false;
  frames(2);
  view_.present = true;
  frames(2);
  EXPECT_EQ(drew("text_scrolled_px"), 0);
}

}  // namespace
}  // namespace mirrorlab::gui
