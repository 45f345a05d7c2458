#include "gui/panels/lesson/lesson_panel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/drawing/lesson_text.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/lesson/clicker.h"
#include "gui/panels/lesson/strip_columns.h"
#include "imgui.h"
#include "lessons/player/live_values.h"
#include "lessons/player/player.h"

namespace mirrorlab::gui {
namespace {

constexpr std::uint32_t kNoteRgb = 0xF0E442;  // what the run said
constexpr std::uint32_t kPassRgb = 0x009E73;  // bluish green
constexpr std::uint32_t kFailRgb = 0xD55E00;  // vermillion
constexpr std::uint32_t kExplainRgb = 0xC8C8C8;

// Whether a step asks about the training step on its machine (a replica's compute, a step, the
// speed-up, the devices that pay): the Compare panel then shows that table, not the all-reduce's.
bool reads_training_step(const lessons::LessonStep& step) {
  const auto training_step = [](const std::string& name) {
    const lessons::LiveValue* v = lessons::find_live_value(name);
    return v != nullptr && v->training_step;
  };
  return std::any_of(step.questions.begin(), step.questions.end(),
                     [&](const lessons::Question& q) { return training_step(q.value); }) ||
         std::any_of(step.checks.begin(), step.checks.end(),
                     [&](const lessons::Check& c) { return training_step(c.that); });
}

struct StepScore {
  bool played = false;
  int passed = 0, checks = 0, right = 0, answered = 0;
};

void coloured_text(std::uint32_t rrggbb, const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, rgb(rrggbb));
  text_wrapped("%s", text);
  ImGui::PopStyleColor();
}

TextFonts fonts_of(const FrameContext& frame) {
  return frame.fonts != nullptr ? *frame.fonts : TextFonts{};
}

void bold_text(const TextFonts& fonts, const std::string& text) {
  if (fonts.bold != nullptr) ImGui::PushFont(fonts.bold);
  text_wrapped("%s", text.c_str());
  if (fonts.bold != nullptr) ImGui::PopFont();
}

// `what` with up to three dots, one more each third of a second: work going on.
std::string going_on(const char* what, const FrameContext& frame) {
  return what + std::string(static_cast<int>(std::fmod(frame.seconds_since_start * 3, 4)), '.');
}

class PlayingLesson final : public LessonPanel {
 public:
  PlayingLesson(lessons::Lesson lesson, lessons::PlayerOptions options, int first, LessonPace pace)
      : player_(std::move(lesson), std::move(options)), pace_(pace), pending_(first) {
    scores_.resize(player_.lesson().steps.size());
  }

  void Draw(FrameContext& frame) override;
  std::string title() const override {
    return strip_ ? "Lesson: " + player_.lesson().title : name();
  }
  bool playing() const override { return !left_; }
  core::TrainingSession* session() override { return player_.session(); }
  const core::SessionConfig& config() const override { return player_.config(); }
  const std::string& setup_error() const override {
    return player_.has_run() ? none_ : player_.run_error();
  }
  std::uint64_t run_number() const override { return player_.run_number(); }
  void advance(ViewSettings& view) override;
  void leave() override {
    left_ = true;
    if (player_.session() != nullptr) player_.session()->pause();  // leaves the cores to yours
  }
  void next() override { go_to(player_.step_index() + 1); }
  void back() override { go_to(player_.step_index() - 1); }
  void page_down() override { follow(clicker_forward(clicker_state())); }
  void page_up() override { follow(clicker_back(clicker_state())); }
  bool settling() const override { return !columns_settled_; }
  bool busy() const override {
    return pending_ >= 0 || stage_ == StepStage::kRunning ||
           (stage_ == StepStage::kAsking && (pace_ == LessonPace::kClass || !player_.replayed()));
  }
  int step_number() const override { return (pending_ >= 0 ? pending_ : player_.step_index()) + 1; }
  int step_count() const override { return steps(); }
  float strip_need_px() const override { return strip_need_; }

 private:
  int steps() const { return static_cast<int>(player_.lesson().steps.size()); }
  void go_to(int i) {
    if (i >= 0 && i < steps()) pending_ = i;
  }
  // The lesson's introduction or the step's text, either read from its top.
  void show_introduction(bool shown) {
    introduction_ = shown;
    scroll_to_.fill(0);
  }
  ClickerState clicker_state() const;
  void follow(ClickerMove move);
  void run_step();
  void scroll_column(std::size_t k);
  void keep_column(std::size_t k);
  float more_row(std::size_t k, float height) const;
  void draw_more_tab(std::size_t k, ImVec2 lower_right);
  void begin_column(std::size_t k, const char* id, ImVec2 size);
  void end_column(std::size_t k, ImVec2 lower_right);
  void enter(int i, ViewSettings& view);
  void finish_step();
  void draw_header(FrameContext& frame);
  void draw_strip(FrameContext& frame);
  void draw_step_text(FrameContext& frame, const lessons::LessonStep& step);
  void draw_asked(FrameContext& frame, const lessons::LessonStep& step);
  bool draw_introduction_button();
  void draw_look_at(FrameContext& frame, const lessons::LessonStep& step);
  void draw_questions(FrameContext& frame, const lessons::LessonStep& step);
  void keep_in_view(float question_top);  // the answer from the cursor on, where it is hidden
  void draw_checks(FrameContext& frame, const lessons::LessonStep& step);
  void draw_score(FrameContext& frame);

  lessons::LessonPlayer player_;
  LessonPace pace_;
  int pending_;  // the step to enter on the next advance(), or -1
  bool left_ = false;
  bool enlarge_ = true;        // show the step's panel alone, filling the room beside the lesson
  bool strip_ = false;         // drawn as the presenter layout's caption strip (last frame)
  bool introduction_ = false;  // shows the lesson's introduction instead of the step's text
  float strip_need_ = 0;       // strip_need_px()
  // The lesson's scrolling columns as last drawn (the strip's text and what it asks, or the
  // panel's window in the usual layout), and where the clicker asked each to scroll (or -1).
  std::vector<ColumnScroll> columns_;
  std::array<float, 2> scroll_to_{-1, -1};
  // Once a step has run, the strip's right column keeps its first answer in view (scrolled to its
  // top where it would be below the column's edge) until the column is scrolled by hand, paged,
  // or the step left.
  bool follow_answer_ = false;
  // How tall each column's contents were when last drawn (its window's height to show them
  // whole): one taller than its room keeps a row below it for the "more" tab.
  std::array<float, 2> content_{0, 0};
  std::array<bool, 2> row_kept_{false, false};  // this frame, below each column
  // Whether the columns showed as much as in the frame before (a new step's first frames lay
  // them out anew: a press or a picture then would meet a layout about to change).
  bool columns_settled_ = true;
  std::vector<float> shown_before_;
  StepStage stage_ = StepStage::kAsking;
  // The predictions being typed or chosen, one per question of the step.
  std::vector<std::array<char, 32>> typed_;
  std::vector<int> chosen_;
  std::vector<std::string> given_;
  // What the step showed once its actions were done.
  std::vector<lessons::Answer> answers_;
  std::vector<lessons::CheckResult> checks_;
  std::vector<StepScore> scores_;
  std::string none_;
};

void PlayingLesson::enter(int i, ViewSettings& view) {
  player_.enter(i);
  const lessons::LessonStep& step = player_.step();
  left_ = false;
  stage_ = pace_ == LessonPace::kAnswered || step.questions.empty() ? StepStage::kRunning
                                                                    : StepStage::kAsking;
  typed_.assign(step.questions.size(), {});
  chosen_.assign(step.questions.size(), -1);
  given_.assign(step.questions.size(), "");
  answers_.clear();
  checks_.clear();
  follow_answer_ = false;
  // The new step's columns are measured anew: settled once two frames show them alike.
  content_.fill(0);
  shown_before_.clear();
  columns_settled_ = false;
  view.watched_moment = -1;
  show_introduction(false);  // a step is read from its top, whatever the one before was scrolled to
  view.distance_to_one_worker.reset();
  view.distance_to_one_device.reset();
  // On a projector one panel large reads better than all of them small: the step's panel fills
  // the room beside the lesson unless the teacher asked for all panels. (The Controls keep their
  // column in the usual layout; the presenter layout shows them in the room.)
  view.focused_panel = enlarge_ && step.look_at != "Lesson" ? step.look_at : "";
  if (step.device >= 0) view.chosen_device = step.device;
  // A step on the timing model's machine: the Compare panel predicts on it (its second tab when
  // the step looks at it, at the training step when the step asks about one), and the All-reduce
  // panel's model plays on it.
  if (const timing::Topology* machine = player_.machine()) {
    view.model_machine = machine->id;
    view.compare_shows_machine = step.look_at == "Compare";
    view.compare_shows_step = reads_training_step(step);
  }
}

void PlayingLesson::advance(ViewSettings& view) {
  if (pending_ >= 0) {
    const int i = pending_;
    pending_ = -1;
    enter(i, view);
  }
  view.highlighted_panel = left_ || player_.step_index() < 0 ? "" : player_.step().look_at;
  view.lesson_asks = !left_ && player_.step_index() >= 0 && stage_ == StepStage::kAsking;
  view.asked_values.clear();
  if (view.lesson_asks) {
    for (const lessons::Question& q : player_.step().questions)
      view.asked_values.push_back(q.value);
  }
  if (left_ || player_.step_index() < 0) return;
  // The steps before it replayed first: its questions ask about the run they leave.
  if (stage_ == StepStage::kAsking && !player_.replayed()) player_.advance_replay();
  if (stage_ != StepStage::kRunning) return;
  if (player_.advance()) {
    finish_step();
    view.distance_to_one_worker = player_.read("distance_to_one_worker", -1);
    view.distance_to_one_device = player_.read("distance_to_one_device", -1);
  }
}

void PlayingLesson::finish_step() {
  stage_ = StepStage::kDone;
  // The answers replace the questions at the top of the strip's right column: it is read from
  // there again, wherever its questions had been scrolled to, and the first answer comes into view
  // where the column shows the question only (a 1280x720 projector's strip of two lines).
  if (strip_) scroll_to_[1] = 0;
  follow_answer_ = true;
  const lessons::LessonStep& step = player_.step();
  StepScore& score = scores_[static_cast<std::size_t>(player_.step_index())];
  score = StepScore{true, 0, static_cast<int>(step.checks.size()), 0, 0};
  for (std::size_t k = 0; k < step.questions.size(); ++k) {
    answers_.push_back(player_.answer(step.questions[k], given_[k]));
    score.answered += given_[k].empty() ? 0 : 1;
    score.right += answers_.back().correct ? 1 : 0;
  }
  for (const lessons::Check& c : step.checks) {
    checks_.push_back(player_.evaluate(c));
    score.passed += checks_.back().passed ? 1 : 0;
  }
}

void PlayingLesson::run_step() {
  const lessons::LessonStep& step = player_.step();
  for (std::size_t k = 0; k < step.questions.size(); ++k) {
    given_[k] = step.questions[k].choices.empty() ? std::string(typed_[k].data())
                : chosen_[k] < 0                  ? ""
                                                  : std::to_string(chosen_[k] + 1);
  }
  stage_ = StepStage::kRunning;
}

ClickerState PlayingLesson::clicker_state() const {
  ClickerState state;
  state.columns = columns_;
  state.stage = left_ ? StepStage::kDone : stage_;
  state.introduction = introduction_;
  state.has_next = player_.step_index() + 1 < steps();
  state.has_back = player_.step_index() > 0;
  return state;
}

void PlayingLesson::follow(ClickerMove move) {
  if (pending_ >= 0 || player_.step_index() < 0) return;  // a step is being entered
  // A page less a line, so that the reader keeps their place.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  switch (move) {
    case ClickerMove::kPageDown:
    case ClickerMove::kPageUp:
      follow_answer_ = false;  // the reader pages on from where the column is
      for (std::size_t k = 0; k < columns_.size() && k < scroll_to_.size(); ++k) {
        scroll_to_[k] = paged_scroll(columns_[k], move == ClickerMove::kPageDown ? 1 : -1, line);
        columns_[k].y = scroll_to_[k];  // a second press before the next frame goes on from it
      }
      break;
    case ClickerMove::kRunStep:
      run_step();
      break;
    case ClickerMove::kCloseIntroduction:
      show_introduction(false);
      break;
    case ClickerMove::kNextStep:
      next();
      break;
    case ClickerMove::kBackStep:
      back();
      break;
    case ClickerMove::kNone:
      break;
  }
}

// Inside column k's window, after its Begin: scrolls it where the clicker asked.
void PlayingLesson::scroll_column(std::size_t k) {
  // Scrolled by hand (the wheel, or the bar dragged): the answer is no longer kept in view; nor
  // once paged (follow(), the "more" tab).
  const ImGuiIO& io = ImGui::GetIO();
  if (k == 1 && ImGui::IsWindowHovered() && (io.MouseWheel != 0 || io.MouseDown[0])) {
    follow_answer_ = false;
  }
  if (scroll_to_[k] < 0) return;
  ImGui::SetScrollY(scroll_to_[k]);  // done as the window begins next frame
}

// The answer and the first line of its explanation, from the cursor on, in view: the column
// read from its top where they show there, else scrolled to put its question at its top where
// all three fit the column, else the answer. Each frame while followed, as the strip's height is
// fitted to the step.
void PlayingLesson::keep_in_view(float question_top) {
  const float top = ImGui::GetCursorPosY(), pad = ImGui::GetStyle().WindowPadding.y;
  const float bottom = top + 2 * ImGui::GetTextLineHeightWithSpacing();
  const float height = ImGui::GetWindowHeight() - 2 * pad;
  const float scroll = bottom <= pad + height            ? 0
                       : bottom - question_top <= height ? question_top - pad
                                                         : top - pad;
  if (std::abs(scroll - ImGui::GetScrollY()) <= 0.5f) return;
  ImGui::SetScrollY(scroll);
  scroll_to_[1] = scroll;  // where a press in this frame pages on from (keep_column)
}

// Inside column k's window, before its End: keeps where it is for the clicker (where it was
// asked to go, when it has not gone there yet), and how far it scrolls with what it holds now:
// a press right after a step changes is judged on the new step, not the old.
void PlayingLesson::keep_column(std::size_t k) {
  ColumnScroll column{ImGui::GetScrollY(), scroll_max_now(),
                      ImGui::GetWindowContentRegionMax().y - ImGui::GetWindowContentRegionMin().y};
  column.y = std::min(scroll_to_[k] >= 0 ? scroll_to_[k] : column.y, column.max);
  scroll_to_[k] = -1;
  columns_.push_back(column);
  content_[k] = content_height();
}

// The height of the tab that says a column hides more below ("more" and a triangle pointing
// down), and the row kept for it below a column whose contents are taller than `height`, its
// whole room: so the tab never covers the column's last visible line, and the row stays while
// the column is paged through (no line comes and goes with it).
float more_tab_height() { return ImGui::GetFontSize() * 1.25f; }

float PlayingLesson::more_row(std::size_t k, float height) const {
  return content_[k] > height + 0.5f ? more_tab_height() : 0;
}

// In the row below column k (its lower right corner at `lower_right`, in the window's
// coordinates), while the column hides more below: a tab saying so (the scroll bar alone is a
// thin line on a projector), framed in the colour of the panel the step looks at. Clicked, it
// pages the column down as Page Down would.
void PlayingLesson::draw_more_tab(std::size_t k, ImVec2 lower_right) {
  // Only in the row kept for it (a new step's first frame keeps none yet: it would cover a line).
  if (k >= columns_.size() || !hides_below(columns_[k]) || !row_kept_[k]) return;
  const float font = ImGui::GetFontSize();
  const char* label = "more";
  const ImVec2 text = ImGui::CalcTextSize(label);
  const ImVec2 pad(font * 0.4f, font * 0.1f);
  const float arrow = font * 0.7f;
  const ImVec2 size(pad.x * 3 + arrow + text.x, more_tab_height());
  ImGui::SetCursorPos(ImVec2(lower_right.x - size.x, lower_right.y - size.y));
  ImGui::PushID(static_cast<int>(k));
  ImGui::PushStyleVar(ImGuiStyleVar_FrameRounding, font * 0.25f);
  ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, 2.0f);
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, pad);
  ImGui::PushStyleVar(ImGuiStyleVar_ButtonTextAlign, ImVec2(0, 0.5f));
  ImGui::PushStyleColor(ImGuiCol_Border, rgb(kLookHereRgb));
  for (ImGuiCol col : {ImGuiCol_Button, ImGuiCol_ButtonHovered, ImGuiCol_ButtonActive}) {
    ImGui::PushStyleColor(
        col,
        ImGui::GetColorU32(col == ImGuiCol_Button ? ImGuiCol_PopupBg : ImGuiCol_FrameBgHovered));
  }
  if (ImGui::Button(label, size)) {
    follow_answer_ = false;
    scroll_to_[k] = paged_scroll(columns_[k], 1, ImGui::GetTextLineHeightWithSpacing());
  }
  ImGui::PopStyleColor(4);
  ImGui::PopStyleVar(4);
  ImGui::PopID();
  const ImVec2 top_left = ImGui::GetItemRectMin();
  const float mid_y = top_left.y + size.y * 0.5f;
  const float x0 = top_left.x + pad.x * 2 + text.x;
  ImGui::GetWindowDrawList()->AddTriangleFilled(
      ImVec2(x0, mid_y - arrow * 0.35f), ImVec2(x0 + arrow, mid_y - arrow * 0.35f),
      ImVec2(x0 + arrow * 0.5f, mid_y + arrow * 0.45f), rgb(kLookHereRgb));
}

// Column k: a child window of `size` (a width of 0: to the room's edge; its height given) less
// the row for its tab, scrolled
// where the clicker asked; end_column() keeps how it scrolls and draws the tab below it.
void PlayingLesson::begin_column(std::size_t k, const char* id, ImVec2 size) {
  const float row = more_row(k, size.y);
  row_kept_[k] = row > 0;
  // The scroll bar's room is kept whether it shows or not, its track and grab unseen while the
  // column shows all: a bar that came with a line too many would narrow the text, which would
  // then wrap to more lines and keep the bar for good.
  const ImVec4 none(0, 0, 0, 0);
  const bool scrolls = row > 0;
  if (!scrolls) {
    for (ImGuiCol col : {ImGuiCol_ScrollbarBg, ImGuiCol_ScrollbarGrab,
                         ImGuiCol_ScrollbarGrabHovered, ImGuiCol_ScrollbarGrabActive}) {
      ImGui::PushStyleColor(col, none);
    }
  }
  // With the window's padding, so that no glyph's edge touches the column's clip.
  ImGui::BeginChild(
      id, ImVec2(size.x, size.y - row), false,
      ImGuiWindowFlags_AlwaysUseWindowPadding | ImGuiWindowFlags_AlwaysVerticalScrollbar);
  if (!scrolls) ImGui::PopStyleColor(4);
  scroll_column(k);
}

void PlayingLesson::end_column(std::size_t k, ImVec2 lower_right) {
  keep_column(k);
  ImGui::EndChild();
  draw_more_tab(k, lower_right);
}

void PlayingLesson::Draw(FrameContext& frame) {
  // The clicker's columns are other windows in the other layout (F5): read from their tops.
  if (strip_ != frame.view.present) scroll_to_.fill(0);
  strip_ = frame.view.present;
  columns_.clear();
  if (strip_) {
    draw_strip(frame);
  } else {
    // The header (the step, Back and Next) stays; the step scrolls below it.
    draw_header(frame);
    const ImVec2 at = ImGui::GetCursorPos(), room = ImGui::GetContentRegionAvail();
    begin_column(0, "##step", ImVec2(0, room.y));
    if (player_.step_index() >= 0) {
      const lessons::LessonStep& step = player_.step();
      draw_step_text(frame, step);
      if (!left_ && !introduction_) {
        ImGui::Spacing();
        draw_asked(frame, step);
      }
    }
    frame.report.drew(name(), "text_hidden_below_px", ImGui::GetScrollMaxY());
    end_column(0, ImVec2(at.x + room.x, at.y + room.y));
  }
  std::vector<float> shown;
  for (const ColumnScroll& column : columns_) shown.push_back(column.shown);
  columns_settled_ = shown == shown_before_;
  shown_before_ = std::move(shown);
  if (player_.step_index() < 0) return;
  frame.report.drew(name(), "step", player_.step_index() + 1);
  frame.report.drew(name(), "paragraphs", static_cast<double>(player_.step().text.size()));
}

// The presenter layout's caption strip: the step's title and buttons on one line, then the
// step's text on the left and what it asks (questions, answers, checks) on the right, each
// scrolling on its own, their widths by what each holds.
void PlayingLesson::draw_strip(FrameContext& frame) {
  const TextFonts fonts = fonts_of(frame);
  const int i = player_.step_index();
  const ImGuiStyle& style = ImGui::GetStyle();
  const auto button_width = [&](const char* label) {
    return ImGui::CalcTextSize(label).x + 2 * style.FramePadding.x;
  };
  const bool has_introduction = !player_.lesson().introduction.empty();
  const char* intro = introduction_ ? "The step" : "Introduction";
  const float buttons = (has_introduction ? button_width(intro) + style.ItemSpacing.x : 0) +
                        button_width("< Back") + button_width("Next >") + style.ItemSpacing.x;
  const float right = ImGui::GetWindowContentRegionMax().x;
  if (fonts.bold != nullptr) ImGui::PushFont(fonts.bold);
  // Wrapped before the buttons (at least 4 ems of title: a wrap position of 0 or less is none).
  ImGui::PushTextWrapPos(std::max(right - buttons - style.ItemSpacing.x,
                                  ImGui::GetCursorPosX() + 4 * ImGui::GetFontSize()));
  ImGui::AlignTextToFramePadding();
  ImGui::TextWrapped("Step %d of %d: %s", std::max(i + 1, 1), steps(),
                     i >= 0 ? player_.step().title.c_str() : "setting up");
  ImGui::PopTextWrapPos();
  if (fonts.bold != nullptr) ImGui::PopFont();
  const float below = ImGui::GetCursorPosY();
  ImGui::SameLine(right - buttons);
  ImGui::SetCursorPosY(ImGui::GetWindowContentRegionMin().y);
  if (has_introduction) {
    draw_introduction_button();
    ImGui::SameLine();
  }
  ImGui::BeginDisabled(i <= 0 || pending_ >= 0);
  if (ImGui::Button("< Back")) back();
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(i + 1 >= steps() || pending_ >= 0);
  if (ImGui::Button("Next >")) next();
  ImGui::EndDisabled();
  ImGui::SetCursorPosY(std::max(below, ImGui::GetCursorPosY()));
  if (i < 0) {
    ImGui::TextDisabled("Setting up the first step...");
    strip_need_ = 0;
    return;
  }
  const lessons::LessonStep& step = player_.step();
  const bool asks = !left_ && !introduction_;
  const float columns_top = ImGui::GetCursorPosY(), columns_left = ImGui::GetCursorPosX();
  const float height = ImGui::GetContentRegionAvail().y;
  // The text's share of the width by what each column holds (gui/panels/lesson/strip_columns.h),
  // and at least what shows its widest word whole beside the column's padding and scroll bar.
  const float room = ImGui::GetContentRegionAvail().x;
  float share = 1.0f;
  if (asks) {
    const float least = widest_word(step.text, fonts) + 2 * style.WindowPadding.x +
                        style.ScrollbarSize + style.ItemSpacing.x;
    share = std::min(std::max(strip_text_share(step, stage_ == StepStage::kAsking), least / room),
                     kWidestTextShare);
  }
  frame.report.drew(name(), "text_width_share", share);
  const float text_width = asks ? std::floor(room * share) : room;
  begin_column(0, "##text", ImVec2(text_width, height));
  draw_step_text(frame, step);
  // How much of the column one must scroll to read (as of the last frame's layout).
  frame.report.drew(name(), "text_hidden_below_px", ImGui::GetScrollMaxY());
  float columns = content_height();
  end_column(0, ImVec2(columns_left + text_width, columns_top + height));
  if (asks) {
    ImGui::SetCursorPos(ImVec2(columns_left + text_width + style.ItemSpacing.x, columns_top));
    begin_column(1, "##asked", ImVec2(0, height));
    draw_asked(frame, step);
    frame.report.drew(name(), "asked_hidden_below_px", ImGui::GetScrollMaxY());
    columns = std::max(columns, content_height());
    end_column(1, ImVec2(columns_left + room, columns_top + height));
  }
  strip_need_ = columns_top + columns + style.WindowPadding.y;
  frame.report.drew(name(), "text_scrolled_px", columns_.empty() ? 0 : columns_[0].y);
  if (asks) frame.report.drew(name(), "asked_scrolled_px", columns_.size() > 1 ? columns_[1].y : 0);
  frame.report.drew(
      name(), "columns_showing_more",
      static_cast<double>(std::count_if(columns_.begin(), columns_.end(), hides_below)));
}

bool PlayingLesson::draw_introduction_button() {
  if (player_.lesson().introduction.empty()) return false;
  const bool pressed = ImGui::Button(introduction_ ? "The step" : "Introduction");
  if (pressed) show_introduction(!introduction_);
  return pressed;
}

void PlayingLesson::draw_step_text(FrameContext& frame, const lessons::LessonStep& step) {
  const TextFonts fonts = fonts_of(frame);
  if (introduction_) {
    bold_text(fonts, player_.lesson().title);
    draw_paragraphs(player_.lesson().introduction, fonts);
    frame.report.drew(name(), "introduction_paragraphs",
                      static_cast<double>(player_.lesson().introduction.size()));
    return;
  }
  if (left_) {
    coloured_text(kNoteRgb,
                  "You applied settings of your own, so the panels show your run, not the "
                  "lesson's.");
    if (ImGui::Button("Back to the lesson")) go_to(player_.step_index());
    ImGui::Separator();
  }
  draw_paragraphs(step.text, fonts);
  if (!left_) draw_look_at(frame, step);
}

// The questions, what the run said, the checks and the score: all about the lesson's run.
void PlayingLesson::draw_asked(FrameContext& frame, const lessons::LessonStep& step) {
  const TextFonts fonts = fonts_of(frame);
  draw_questions(frame, step);
  if (stage_ == StepStage::kDone) {
    for (const std::string& note : player_.notes()) {
      bold_text(fonts, "The run said:");
      coloured_text(kNoteRgb, note.c_str());
    }
  }
  draw_checks(frame, step);
  // A run that could not even be set up is what a step may ask about: said once it runs.
  if (!player_.run_error().empty() && stage_ != StepStage::kAsking) {
    bold_text(fonts, "The run stopped:");
    coloured_text(kFailRgb, player_.run_error().c_str());
  }
  draw_score(frame);
}

void PlayingLesson::draw_header(FrameContext& frame) {
  const TextFonts fonts = fonts_of(frame);
  bold_text(fonts, player_.lesson().title);
  const int i = player_.step_index();
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float button = ImGui::CalcTextSize("Next >").x + 2 * ImGui::GetStyle().FramePadding.x;
  ImGui::AlignTextToFramePadding();
  ImGui::Text("Step %d of %d", std::max(i + 1, 1), steps());
  ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - 2 * button - spacing);
  ImGui::BeginDisabled(i <= 0 || pending_ >= 0);
  if (ImGui::Button("< Back", ImVec2(button, 0))) back();
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(i + 1 >= steps() || pending_ >= 0);
  if (ImGui::Button("Next >", ImVec2(button, 0))) next();
  ImGui::EndDisabled();
  if (i >= 0) bold_text(fonts, player_.step().title);
  draw_introduction_button();
  ImGui::Separator();
}

void PlayingLesson::draw_look_at(FrameContext& frame, const lessons::LessonStep& step) {
  if (step.look_at.empty()) return;
  std::string where = "Look at the " + step.look_at + " panel";
  if (step.device >= 0) where.append(", /gpu:").append(std::to_string(step.device));
  swatch(rgb(kLookHereRgb), ImGui::GetStyle().FramePadding.y);
  ImGui::AlignTextToFramePadding();
  text_wrapped("%s", where.c_str());
  // The Controls have their own column in the usual layout: nothing to enlarge.
  if (step.look_at == "Controls" && !frame.view.present) return;
  const bool alone = frame.view.focused_panel == step.look_at;
  const char* label = alone ? "show all panels" : "enlarge it";
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize(label).x + 4) ImGui::NewLine();
  if (ImGui::SmallButton(label)) {
    frame.view.focused_panel = alone ? "" : step.look_at;
    enlarge_ = !alone;  // for the next steps too
  }
}

void PlayingLesson::draw_questions(FrameContext& frame, const lessons::LessonStep& step) {
  if (step.questions.empty()) return;
  const TextFonts fonts = fonts_of(frame);
  for (std::size_t k = 0; k < step.questions.size(); ++k) {
    const lessons::Question& q = step.questions[k];
    ImGui::PushID(static_cast<int>(k));
    const float question_top = ImGui::GetCursorPosY();
    bold_text(fonts, stage_ == StepStage::kAsking ? "Predict: " + q.ask : q.ask);
    if (stage_ == StepStage::kAsking) {
      if (q.choices.empty()) {
        // The field and its label, beside it where both fit (narrowing the field to 4 ems at
        // least), else the label under it: a narrow column had cut "your answer" at its edge.
        const char* label = "your answer";
        const float em = ImGui::GetFontSize();
        const float gap = ImGui::GetStyle().ItemInnerSpacing.x;
        const float avail = ImGui::GetContentRegionAvail().x;
        const float field = std::min(em * 8, avail - ImGui::CalcTextSize(label).x - gap);
        const bool beside = field >= em * 4;
        ImGui::SetNextItemWidth(beside ? field : std::min(em * 8, avail));
        ImGui::InputText("##your answer", typed_[k].data(), typed_[k].size(),
                         ImGuiInputTextFlags_CharsScientific);
        if (beside) {
          ImGui::SameLine(0, gap);
          ImGui::AlignTextToFramePadding();
        }
        ImGui::TextUnformatted(label);
      } else {
        // Side by side where they all fit the column's width, a line each otherwise: three
        // short choices ("/gpu:0") had taken three lines of a strip with none to spare.
        const ImGuiStyle& style = ImGui::GetStyle();
        float row = 0;
        for (const std::string& choice : q.choices) {
          row += ImGui::GetFrameHeight() + style.ItemInnerSpacing.x +
                 ImGui::CalcTextSize(choice.c_str()).x + 2 * style.ItemSpacing.x;
        }
        const bool side_by_side = row <= ImGui::GetContentRegionAvail().x;
        for (int c = 0; c < static_cast<int>(q.choices.size()); ++c) {
          if (c > 0 && side_by_side) ImGui::SameLine(0, 2 * style.ItemSpacing.x);
          ImGui::RadioButton(q.choices[static_cast<std::size_t>(c)].c_str(), &chosen_[k], c);
        }
      }
    } else if (stage_ == StepStage::kRunning) {
      text_wrapped_dim("%s", given_[k].empty()
                                 ? "(no prediction)"
                                 : ("you said " + lessons::prediction_text(q, given_[k])).c_str());
    } else if (k < answers_.size()) {
      const lessons::Answer& a = answers_[k];
      if (k == 0 && follow_answer_ && strip_) keep_in_view(question_top);
      // Wrapped text, as every line of the strip's columns: a line the column shows only in part
      // (the answer under a two-line question at 1280x720) is left out, not half drawn.
      text_wrapped("Answer: %s", a.text.c_str());
      // For a test that looks for the answer in the step's panel: the question, its answer.
      const std::string key = "answer " + std::to_string(k + 1);
      frame.report.words(key, a.text);
      frame.report.words("question " + std::to_string(k + 1), q.ask);
      if (a.value && q.choices.empty()) frame.report.note(key, *a.value);
      if (!given_[k].empty()) {
        ImGui::SameLine();
        const std::string verdict =
            a.correct ? "(you were right)"
                      : "(you said " + lessons::prediction_text(q, given_[k]) + ")";
        coloured_text(a.correct ? kPassRgb : kFailRgb, verdict.c_str());
      }
      if (!q.explain.empty()) coloured_text(kExplainRgb, q.explain.c_str());
    }
    ImGui::PopID();
    ImGui::Spacing();
  }
  if (stage_ == StepStage::kAsking &&
      ImGui::Button("Run the step and show me", ImVec2(ImGui::GetContentRegionAvail().x, 0))) {
    run_step();
  }
  if (stage_ == StepStage::kAsking && !player_.replayed()) {
    // Entered by Back or a chosen step (or after a step left unrun): the run catches up first.
    text_wrapped_dim("%s", going_on("The steps before this one are replayed", frame).c_str());
  }
  frame.report.drew(name(), "questions", static_cast<double>(step.questions.size()));
}

void PlayingLesson::draw_checks(FrameContext& frame, const lessons::LessonStep& step) {
  if (step.checks.empty()) return;
  ImGui::Separator();
  if (stage_ != StepStage::kDone) {
    text_wrapped_dim("%s", stage_ == StepStage::kRunning
                               ? going_on("The step is running", frame).c_str()
                               : "The checks run once the step has.");
    return;
  }
  int passed = 0;
  for (std::size_t k = 0; k < checks_.size(); ++k) {
    const lessons::CheckResult& r = checks_[k];
    passed += r.passed ? 1 : 0;
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(r.passed ? kPassRgb : kFailRgb));
    text_wrapped("%s", r.passed ? "pass" : "FAIL");
    ImGui::PopStyleColor();
    ImGui::SameLine();
    text_wrapped("%s", step.checks[k].says.c_str());
    ImGui::Indent(ImGui::GetFontSize() * 2.2f);
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(kExplainRgb));
    text_wrapped("%s", r.shown.c_str());
    ImGui::PopStyleColor();
    ImGui::Unindent(ImGui::GetFontSize() * 2.2f);
  }
  frame.report.drew(name(), "checks_passed", passed);
  frame.report.drew(name(), "checks_failed", static_cast<double>(checks_.size()) - passed);
}

void PlayingLesson::draw_score(FrameContext& frame) {
  StepScore total;
  int played = 0;
  std::string which;  // the steps played here, by number: entered at step 3, "step 3"
  for (std::size_t k = 0; k < scores_.size(); ++k) {
    const StepScore& s = scores_[k];
    if (!s.played) continue;
    ++played;
    which.append(which.empty() ? "" : ", ").append(std::to_string(k + 1));
    total.passed += s.passed, total.checks += s.checks;
    total.right += s.right, total.answered += s.answered;
  }
  ImGui::Separator();
  std::string line = played == 0 ? "No step played yet"
                                 : (played == 1 ? "Played step " : "Played steps ") + which + " (" +
                                       std::to_string(played) + " of the " +
                                       std::to_string(steps()) + " steps played)";
  if (total.checks > 0) {  // steps that only show something have no checks: no "0 of 0"
    line.append("; checks passed: ").append(std::to_string(total.passed));
    line.append(" of ").append(std::to_string(total.checks));
  }
  if (total.answered > 0) {
    line.append("; predictions right: ").append(std::to_string(total.right));
    line.append(" of ").append(std::to_string(total.answered));
  }
  // The presenter layout's menu bar says the keys already ("Space/PgDn: next, PgUp: back").
  line.append(strip_ ? "." : ". Page Down: more, the run, then the next step; Page Up: back.");
  text_wrapped_dim("%s", line.c_str());
  frame.report.drew(name(), "steps_played", played);
}

}  // namespace

std::unique_ptr<LessonPanel> make_lesson_panel(const std::string& file, int first_step,
                                               LessonPace pace,
                                               std::shared_ptr<const core::FashionMnist> data,
                                               const core::SessionConfig& base) {
  lessons::Lesson lesson;
  try {
    lesson = lessons::load_lesson(file);
  } catch (const lessons::LessonError& e) {
    throw std::invalid_argument(e.what());
  }
  if (const std::string why = lessons::why_not_playable(lesson, first_step); !why.empty()) {
    throw std::invalid_argument(why);
  }
  lessons::PlayerOptions options;
  options.data = std::move(data);
  options.make_devices = base.make_devices;
  return std::make_unique<PlayingLesson>(std::move(lesson), std::move(options), first_step - 1,
                                         pace);
}

}  // namespace mirrorlab::gui
