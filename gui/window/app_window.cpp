// Sections: the session; layout and drawing; the frame loop. The platform's window (GLFW, OpenGL,
// ImGui's setup and fonts) is gui/window/platform_window.h, the frames' pacing frame_pacing.h,
// the panels' places gui/panels/panel_layout.h, the scripted runs gui/window/scripted_run.h.
#include "gui/window/app_window.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint/checkpoint_folder.h"
#include "gui/drawing/colors.h"
#include "gui/drawing/content_height.h"
#include "gui/model/advice.h"
#include "gui/model/modelled_all_reduce.h"
#include "gui/panels/all_reduce/all_reduce_model_view.h"
#include "gui/panels/all_reduce/all_reduce_panel.h"
#include "gui/panels/compare/compare_panel.h"
#include "gui/panels/controls/controls_panel.h"
#include "gui/panels/lesson/lesson_panel.h"
#include "gui/panels/panel.h"
#include "gui/panels/panel_layout.h"
#include "gui/panels/strip_fit.h"
#include "gui/window/frame_fingerprint.h"
#include "gui/window/frame_pacing.h"
#include "gui/window/platform_window.h"
#include "gui/window/pressed_keys.h"
#include "gui/window/screenshot.h"
#include "gui/window/scripted_run.h"
#include "gui/window/text_audit.h"
#include "imgui.h"
#include "imgui_internal.h"

namespace mirrorlab::gui {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ============================================================================================
// The window
// ============================================================================================

class AppWindow : public AppActions {
 public:
  // `watched`: the window shows that session (a run another thread trains) and makes none.
  AppWindow(std::shared_ptr<const core::FashionMnist> data, const core::SessionConfig& config,
            const AppOptions& options, core::TrainingSession* watched = nullptr);
  ~AppWindow() override;
  int run();

  void reconfigure(const core::SessionConfig& config) override;
  void save_screenshot() override { screenshot_requested_ = true; }
  void load_checkpoint(const std::string& folder) override;
  const std::string& load_error() const override { return load_error_; }

 private:
  void draw_frame();
  void draw_menu_bar();
  void draw_panels(FrameContext& frame);
  // Draws `panel` as a window at `place`, framed when a lesson's step looks at it. Returns the
  // room it wants (gui/drawing/content_height.h): `need` (a window that tall shows it whole), or
  // it fills what it gets, up to `most` (0: any).
  struct PanelRoom {
    float need = 0;
    bool fills = false;
    float most = 0;
  };
  PanelRoom draw_panel(Panel& panel, const PixelRect& place, FrameContext& frame, float window_area,
                       int extra_flags = 0);
  // The presenter strip's height for the next frame, from what it and the panels needed in this
  // one (`panels_need`: the room's height that shows every panel in it whole; `base`: the strip's
  // height by its share).
  void fit_strip(const WindowLayout& places, const PixelRect& work, float base, float panels_need,
                 float filled_room);
  void handle_keys();
  // T: the lesson's caption strip tall or not; tall asks for the presenter layout.
  void toggle_tall_caption() {
    view_.tall_caption = !view_.tall_caption;
    view_.present = view_.present || view_.tall_caption;
  }
  // The run shown: the lesson's while one plays, else the window's own.
  bool lesson_shown() const { return lesson_ && lesson_->playing(); }
  core::TrainingSession* session() {
    if (watched_ != nullptr) return watched_;
    return lesson_shown() ? lesson_->session() : session_.get();
  }
  const std::string& setup_error() const {
    return lesson_shown() ? lesson_->setup_error() : setup_error_;
  }
  std::uint64_t run_id() const {
    return lesson_shown() ? (std::uint64_t{1} << 63) | lesson_->run_number() : own_runs_;
  }
  FrameContext frame_context() {
    return FrameContext{snapshot_,
                        session(),
                        lesson_shown() ? lesson_->config() : config_,
                        setup_error(),
                        view_,
                        report_,
                        *this,
                        now_seconds() - start_,
                        &fonts_,
                        run_id(),
                        &machines_};
  }
  void follow_lesson();  // drives the lesson's step; a new run shown starts a new snapshot
  // "" when written, else why not (said on stderr too, unless screenshot_done says it).
  std::string write_screenshot(const std::string& path);
  void note_text_out_of_place(const ImDrawData& draw_data);
  // The report of the run (or, --every-step, of a lesson's step) to `path` ("": nowhere), its
  // last frame's text audited; false when it could not be written (said on stderr).
  bool write_step_report(const std::string& path);

  std::shared_ptr<const core::FashionMnist> data_;
  core::SessionConfig config_;
  AppOptions options_;
  std::unique_ptr<core::TrainingSession> session_;  // the window's own run
  core::TrainingSession* watched_ = nullptr;        // or the run it watches (not its own)
  std::uint64_t own_runs_ = 0;                      // counts the own runs built
  std::unique_ptr<LessonPanel> lesson_;             // --lesson: the Lesson panel and its runs
  std::uint64_t shown_run_ = 0;                     // run_id() of the snapshot's run
  TextFonts fonts_;
  TopologyCatalog machines_;  // the timing model's machines, for the Compare and All-reduce panels
  core::SessionSnapshot snapshot_;
  std::string setup_error_;
  std::string load_error_;  // why the last Load checkpoint did not
  ViewSettings view_;
  GuiReport report_;
  std::string frame_words_;  // every panel's logged words this frame, for the text audit
  ControlsPanel controls_;
  std::vector<std::unique_ptr<Panel>> panels_;
  ComparePanel* compare_ = nullptr;  // owned by panels_; --compare starts it
  std::unique_ptr<PlatformWindow> window_;
  FramePacer pacer_{options_.max_fps, options_.refresh_hz};
  ScriptedRun script_{options_};
  int pressed_key_ = -1;               // --press: the key down this frame
  bool screenshot_requested_ = false;  // read the frame drawn next before it is shown
  std::string screenshot_path_;        // where to write it ("": a numbered PNG)
  int screenshots_taken_ = 0;
  double start_ = now_seconds();
  FrameStats stats_;
  double last_refresh_ = 0;  // when the snapshot was last copied from the session
  std::uint64_t last_fingerprint_ = 0;
  bool screenshot_failed_ = false;
  bool step_report_failed_ = false;  // --every-step: a step's report could not be written
  // The presenter strip fitted to what it and the panels hold, for the step, panel, layout and
  // window size in strip_key_; any of them changed, it starts from its share.
  StripFit strip_fit_;
  std::string strip_key_;
  bool strip_refitted_ = false;  // this frame: a scripted run waits for the layout to settle
};

AppWindow::AppWindow(std::shared_ptr<const core::FashionMnist> data,
                     const core::SessionConfig& config, const AppOptions& options,
                     core::TrainingSession* watched)
    : data_(std::move(data)), config_(config), options_(options), watched_(watched) {
  if (watched_ != nullptr) {
    // Its report is written when it closes; nothing is scripted: its driver trains the run, and
    // the window stays until closed.
    AppOptions unscripted = options;
    unscripted.report.clear();
    unscripted.screenshot.clear();
    unscripted.frames = 0;
    unscripted.press.clear();
    script_ = ScriptedRun(unscripted);
  }
  view_.font_scale = options.font_scale;
  // The tall strip is the presenter layout's: asking for it asks for that layout.
  view_.present = options.present || options.tall_caption;
  view_.tall_caption = options.tall_caption;
  view_.focused_panel = options.panel;
  if (!options.topology.empty()) {
    machines_.add_file(options.topology);
    view_.model_machine = options.topology;
    view_.compare_shows_machine = true;
  }
  if (options.speedup) {
    view_.compare_shows_machine = true;
    view_.compare_shows_step = true;
  }
  view_.modelled_allreduce = options.modelled_allreduce;
  view_.modelled_bytes = static_cast<double>(options.modelled_bytes);
  view_.modelled_step = options.modelled_step;
  panels_ = make_panels();
  if (const std::string problem = check_panel_name(options.panel, panels_); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  for (const auto& p : panels_) {
    if (auto* compare = dynamic_cast<ComparePanel*>(p.get())) compare_ = compare;
  }
  if (!options.lesson_file.empty()) {  // its runs replace the window's own until left
    const LessonPace pace = !script_.active()    ? LessonPace::kClass
                            : options.unanswered ? LessonPace::kUnanswered
                                                 : LessonPace::kAnswered;
    lesson_ = make_lesson_panel(options.lesson_file, options.lesson_step, pace, data_, config);
  }
  window_ = std::make_unique<PlatformWindow>(options_.width, options_.height, options_.fit_screen,
                                             view_.font_scale, lesson_ != nullptr, &fonts_);
  window_->window_size(&options_.width, &options_.height);  // fitted to the screen, maybe
  // A lesson on a small screen with a large font leaves its panels too narrow to read beside
  // the Controls and the lesson's column: it opens in the presenter layout (F5 goes back).
  if (lesson_ && !view_.present) {
    const float width = static_cast<float>(options_.width);
    const WindowLayout usual =
        arrange_window(PixelRect{0, 0, width, static_cast<float>(options_.height)},
                       static_cast<float>(options_.height), view_.font_scale, true, false);
    view_.present = usual.panels.w < kLeastPanelEms * 16.0f * view_.font_scale;
  }
  if (lesson_) {
    follow_lesson();  // enters the first step: its run exists before the first frame
  } else if (watched_ == nullptr) {
    reconfigure(config);
  }
}

AppWindow::~AppWindow() {
  lesson_.reset();  // stops training first: closing the window ends the run cleanly
  session_.reset();
  window_.reset();
}

// ============================================================================================
// The session
// ============================================================================================

void AppWindow::reconfigure(const core::SessionConfig& config) {
  if (watched_ != nullptr) return;  // the run is its driver's to change (the Controls say so)
  if (lesson_) lesson_->leave();    // the user's own settings: the lesson's run is left alone
  ++own_runs_;
  config_ = config;
  session_.reset();  // frees the old devices' memory before the new ones are made
  setup_error_.clear();
  snapshot_ = core::SessionSnapshot{};
  try {
    session_ = std::make_unique<core::TrainingSession>(data_, config_);
  } catch (const std::exception& e) {
    setup_error_ = std::string(e.what()) + ". " + advice(e, config_);
  }
}

void AppWindow::load_checkpoint(const std::string& folder) {
  load_error_.clear();
  if (watched_ != nullptr) {
    load_error_ = "this window watches a run trained elsewhere: load checkpoints in mirrorlab gui";
    return;
  }
  auto resume = std::make_shared<core::SessionResume>();
  try {
    const core::CheckpointFolder checkpoints(folder);
    const core::CheckpointEntry newest = checkpoints.newest();
    resume->checkpoint = checkpoints.load(newest);
    resume->file = newest.state;
  } catch (const core::CheckpointError& e) {
    load_error_ = e.what();  // the run shown goes on as it was
    return;
  }
  core::SessionConfig config = core::config_for_checkpoint(resume->checkpoint, config_);
  config.resume = std::move(resume);
  reconfigure(config);     // a checkpoint that does not fit this data is the new run's setup error
  config_.resume.reset();  // Apply later starts afresh from these settings
}

void AppWindow::follow_lesson() {
  if (!lesson_) return;
  lesson_->advance(view_);
  if (lesson_shown() && session_) session_.reset();  // back in the lesson: the own run goes
  if (run_id() != shown_run_) {
    shown_run_ = run_id();
    snapshot_ = core::SessionSnapshot{};
    view_.watched_moment = -1;
  }
}

// ============================================================================================
// Layout and drawing
// ============================================================================================

void AppWindow::draw_menu_bar() {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("View")) {
    if (ImGui::MenuItem("All panels", "0", view_.focused_panel.empty())) {
      view_.focused_panel.clear();
    }
    for (const auto& p : panels_) {
      if (ImGui::MenuItem(p->name(), nullptr, view_.focused_panel == p->name())) {
        view_.focused_panel = p->name();
      }
    }
    ImGui::Separator();
    ImGui::MenuItem("Presenter layout", "F5", &view_.present);
    if (lesson_ && ImGui::MenuItem("Tall lesson text (presenter)", "T", view_.tall_caption)) {
      toggle_tall_caption();
    }
    ImGui::MenuItem("ImGui metrics", nullptr, &view_.show_imgui_metrics);
    ImGui::EndMenu();
  }
  if (ImGui::MenuItem("Screenshot (F12)")) save_screenshot();
  // Then, as far as they fit: the lesson's title where the caption strip has none, the keys.
  std::vector<std::string> words;
  if (lesson_ && view_.present) words.push_back(lesson_->title());
  const bool lesson_plays = lesson_ && lesson_->playing();
  for (const char* key :
       {"Space/PgDn: next, PgUp: back", "Space: run/pause", "N: one step", "F5: presenter",
        "T: tall lesson text", "0-9: panels", "F12/P: screenshot"}) {
    const std::string_view k = key;
    const bool runs = k.starts_with("Space:") || k.starts_with("N:");
    if ((k.starts_with("Space/") && !lesson_plays) || (k.starts_with("Space:") && lesson_plays) ||
        (k.starts_with("T:") && !lesson_) || (runs && watched_ != nullptr) ||
        (k.starts_with("N:") && view_.lesson_asks)) {
      continue;
    }
    words.emplace_back(key);
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    const float room = ImGui::GetWindowContentRegionMax().x - ImGui::GetCursorPosX();
    if (ImGui::CalcTextSize(words[i].c_str()).x + ImGui::GetFontSize() > room) break;
    ImGui::SameLine(0, ImGui::GetFontSize());
    if (i == 0 && lesson_ && view_.present) {
      ImGui::TextUnformatted(words[i].c_str());
    } else {
      ImGui::TextDisabled("%s", words[i].c_str());
    }
  }
  ImGui::EndMainMenuBar();
}

void AppWindow::draw_panels(FrameContext& frame) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const PixelRect work{viewport->WorkPos.x, viewport->WorkPos.y, viewport->WorkSize.x,
                       viewport->WorkSize.y};
  const std::string strip_key = std::to_string(lesson_ ? lesson_->step_number() : 0) + " " +
                                view_.focused_panel + " " + std::to_string(view_.tall_caption) +
                                std::to_string(view_.present) + std::to_string(view_.lesson_asks) +
                                " " + std::to_string(work.w) + "x" + std::to_string(work.h);
  if (strip_key != strip_key_) {
    strip_key_ = strip_key;
    strip_fit_.restart();
  }
  // The layout with the strip at its share, and as fitted (the same while it keeps its share).
  const WindowLayout at_share =
      arrange_window(work, viewport->Size.y, view_.font_scale, lesson_ != nullptr, view_.present,
                     view_.tall_caption);
  const WindowLayout places =
      strip_fit_.fitted() > 0
          ? arrange_window(work, viewport->Size.y, view_.font_scale, lesson_ != nullptr,
                           view_.present, view_.tall_caption, strip_fit_.fitted())
          : at_share;
  // Only the focused panel, or all of them. The Controls are a panel of the room in the
  // presenter layout when a lesson's step looks at them; in the usual one they keep their column.
  const bool controls_focused = view_.focused_panel == controls_.name();
  std::vector<std::string> present;
  for (const auto& panel : panels_) {
    if (view_.focused_panel.empty() || controls_focused || view_.focused_panel == panel->name()) {
      present.push_back(panel->name());
    }
  }
  std::vector<std::pair<std::string, Rect>> cells = place_panels(present);
  if (!view_.focused_panel.empty() && !(controls_focused && !view_.present)) {
    cells = {{view_.focused_panel, Rect{0, 0, 1, 1}}};
  }
  const PixelRect& room = places.panels;
  const float window_area = viewport->Size.x * viewport->Size.y;
  if (places.controls.w > 0) draw_panel(controls_, places.controls, frame, window_area);
  if (places.lesson.w > 0) {
    // The strip's title is in the menu bar: its two columns scroll on their own.
    const ImGuiWindowFlags strip =
        places.lesson_is_strip ? ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoTitleBar : 0;
    draw_panel(*lesson_, places.lesson, frame, window_area, strip);
  }
  // The room a panel that fills whatever it gets is given: at the strip's share, or while the
  // step asks, as little as kAskingPanelsShare of the work area, and once it has run,
  // kAnsweredPanelsShare or kLeastPictureLines (gui/panels/strip_fit.h).
  const float answered_room = std::max(kAnsweredPanelsShare * work.h,
                                       kLeastPictureLines * ImGui::GetTextLineHeightWithSpacing());
  const float filled_room =
      std::min(at_share.panels.h, view_.lesson_asks               ? kAskingPanelsShare * work.h
                                  : lesson_ && lesson_->playing() ? answered_room
                                                                  : at_share.panels.h);
  float panels_need = 0;
  for (const auto& [name, r] : cells) {
    Panel* panel = name == controls_.name() ? &controls_ : nullptr;
    for (const auto& p : panels_) {
      if (name == p->name()) panel = p.get();
    }
    if (panel == nullptr) continue;
    const PanelRoom got = draw_panel(
        *panel, PixelRect{room.x + r.x * room.w, room.y + r.y * room.h, r.w * room.w, r.h * room.h},
        frame, window_area);
    // The room each cell's share needs; one that fills its room, what the share's layout gives
    // (no more than it would use).
    float cell_need = got.fills ? r.h * filled_room : got.need;
    if (got.fills && got.most > 0) cell_need = std::min(cell_need, got.most);
    // In a lesson, a panel that would scroll even at the strip's share (the Controls) gets no
    // more than one that fills its room (the step's question, then its answers, are read first),
    // and all that the step's text leaves.
    const bool in_lesson = view_.lesson_asks || (lesson_ && lesson_->playing());
    if (in_lesson && !got.fills && got.need > r.h * at_share.panels.h) {
      const float strip_need = lesson_ ? lesson_->strip_need_px() : 0;
      cell_need = r.h * std::max(filled_room, strip_need > 0 ? work.h - strip_need : 0.0f);
    }
    if (r.h > 0) panels_need = std::max(panels_need, cell_need / r.h);
  }
  if (places.lesson_is_strip) fit_strip(places, work, at_share.lesson.h, panels_need, filled_room);
}

void AppWindow::fit_strip(const WindowLayout& places, const PixelRect& work, float base,
                          float panels_need, float filled_room) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  StripMeasure m;
  m.base = base;
  m.total = work.h;
  m.strip = places.lesson.h;
  m.strip_need = lesson_->strip_need_px();
  m.panels_need = panels_need;
  m.panels_least = view_.lesson_asks ? filled_room : 0;
  m.line = ImGui::GetTextLineHeightWithSpacing();
  const float before = strip_fit_.fitted();
  const float fitted = strip_fit_.next(m);
  report_.drew(lesson_->name(), "strip_height_share", places.lesson.h / viewport->Size.y);
  report_.drew(lesson_->name(), "strip_refits", strip_fit_.refits());
  if (fitted == before) return;
  strip_refitted_ = true;
  pacer_.keep_lively(now_seconds() + 0.25);  // the next frame draws the new layout soon
}

AppWindow::PanelRoom AppWindow::draw_panel(Panel& panel, const PixelRect& place,
                                           FrameContext& frame, float window_area,
                                           int extra_flags) {
  const ImGuiWindowFlags fixed = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                 ImGuiWindowFlags_NoCollapse | extra_flags;
  ImGui::SetNextWindowPos(ImVec2(place.x, place.y));
  ImGui::SetNextWindowSize(ImVec2(place.w, place.h));
  // The panel a lesson's step talks about: a thick frame and title bar in the look-here colour.
  const bool highlighted = panel.name() == view_.highlighted_panel;
  if (highlighted) {
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 3.0f * view_.font_scale);
    ImGui::PushStyleColor(ImGuiCol_Border, rgb(kLookHereRgb));
    ImGui::PushStyleColor(ImGuiCol_TitleBg, rgb(kLookHereRgb));
    ImGui::PushStyleColor(ImGuiCol_TitleBgActive, rgb(kLookHereRgb));
    ImGui::PushStyleColor(ImGuiCol_Text, rgb(0x000000));
    report_.note("highlighted_panel_area_share", place.area() / window_area);
  }
  // "###" keeps the window's identity when its title changes (a lesson's title).
  const std::string title = panel.title() + "###" + panel.name();
  const bool open = ImGui::Begin(title.c_str(), nullptr, fixed);
  if (highlighted) ImGui::PopStyleColor();  // the title only: the contents keep their colours
  // A report keeps the panel's words as drawn: ImGui's log gets every text item, and the
  // labels drawn on pictures (draw_label, gui/drawing/colors.h).
  const bool keep_words = !options_.report.empty();
  if (keep_words) ImGui::LogToBuffer();
  if (open) panel.Draw(frame);
  // What a class cannot see without scrolling: the panel's content below its window.
  if (open) report_.drew(panel.name(), "hidden_below_px", ImGui::GetScrollMaxY());
  const float need = open ? content_height() : place.h;
  // The room it would need besides (a table scrolling its rows counts too).
  if (open) report_.drew(panel.name(), "short_of_px", std::max(0.0f, need - place.h));
  const bool fills = open && filling_room();
  const float most = fills ? most_room_filled() : 0;
  if (open) report_.drew(panel.name(), "fills_room", fills ? 1 : 0);
  // What a panel that fills its room leaves empty below its items; and where it says the most it
  // uses (lanes at their tallest), how far short of that its room is.
  if (fills) report_.drew(panel.name(), "empty_below_px", std::max(0.0f, place.h - need));
  if (most > 0) report_.drew(panel.name(), "short_of_most_px", std::max(0.0f, most - place.h));
  if (keep_words) {
    report_.words(panel.name(), GImGui->LogBuffer.c_str());
    frame_words_.append(GImGui->LogBuffer.c_str()).append("\n");
    ImGui::LogFinish();
  }
  ImGui::End();
  if (highlighted) {
    ImGui::PopStyleColor(3);
    ImGui::PopStyleVar();
  }
  return PanelRoom{need, fills, most};
}

void AppWindow::handle_keys() {
  const ImGuiIO& io = ImGui::GetIO();
  // The clicker's keys, also while a prediction is typed in (a field has no use for them), and
  // once a press: a key held down (or a clicker's repeat) must not run through the steps.
  if (lesson_ && ImGui::IsKeyPressed(GLFW_KEY_PAGE_DOWN, false)) lesson_->page_down();
  if (lesson_ && ImGui::IsKeyPressed(GLFW_KEY_PAGE_UP, false)) lesson_->page_up();
  if (io.WantTextInput) return;  // typing a number in a field is not a command
  // ImGui 1.86 indexes keys by the platform's codes: GLFW_KEY_* here.
  if (ImGui::IsKeyPressed(GLFW_KEY_F12) || ImGui::IsKeyPressed(GLFW_KEY_P)) save_screenshot();
  if (ImGui::IsKeyPressed(GLFW_KEY_F5)) view_.present = !view_.present;
  if (lesson_ && ImGui::IsKeyPressed(GLFW_KEY_T)) toggle_tall_caption();
  core::TrainingSession* run = session();
  // In a lesson Space goes on as in a slide show (Page Down): running the lesson's run freely
  // would leave its step's plan behind.
  if (lesson_ && lesson_->playing()) {
    if (ImGui::IsKeyPressed(GLFW_KEY_SPACE, false)) lesson_->page_down();
  } else if (run && ImGui::IsKeyPressed(GLFW_KEY_SPACE)) {
    snapshot_.state == core::SessionState::kRunning ? run->pause() : run->run();
  }
  // While a lesson's step waits for the class's predictions, its run stays where the steps
  // before left it: N or the Right arrow would run on into what the questions ask (lesson 5's
  // second step asks the ring's steps: Right had shown "Step 3 of 6"). Recorded moments can
  // still be walked.
  const bool run_may_move = !(lesson_ && view_.lesson_asks);
  if (run && run_may_move && ImGui::IsKeyPressed(GLFW_KEY_N)) run->step();
  FrameContext frame = frame_context();
  if (arrows_walk_the_model(view_, kAllReducePanelName)) {  // the panel clamps to the model's steps
    if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) ++view_.modelled_step;
    if (ImGui::IsKeyPressed(GLFW_KEY_LEFT))
      view_.modelled_step = std::max(0, view_.modelled_step - 1);
  } else {
    if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) watch_forward(frame, run_may_move);
    if (ImGui::IsKeyPressed(GLFW_KEY_LEFT)) watch_back(frame);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_0)) view_.focused_panel.clear();
  for (int i = 0; i < static_cast<int>(panels_.size()) && i < 9; ++i) {
    if (ImGui::IsKeyPressed(GLFW_KEY_1 + i)) {
      view_.focused_panel = panels_[static_cast<std::size_t>(i)]->name();
    }
  }
}

void AppWindow::draw_frame() {
  const double begin = now_seconds();
  strip_refitted_ = false;
  // Training running freely brings new results every few milliseconds. Copied at most
  // refresh_hz times a second, the frames between show the same picture and are not drawn
  // (see frame_fingerprint.h), so the rasterizer's time goes back to training; 15 pictures a
  // second still read as continuous. Paused or held, every frame copies, so a click shows at once.
  follow_lesson();
  machines_.refresh(begin);  // a fit saved while the window is open shows up in it
  const bool running = snapshot_.stepping && !snapshot_.held_at;
  if (session() && (!running || options_.refresh_hz <= 0 ||
                    begin - last_refresh_ >= 1.0 / options_.refresh_hz)) {
    session()->update(snapshot_);
    last_refresh_ = begin;
  }
  window_->new_frame();
  // A scripted run (tests, README pictures) ignores the pointer: under Xvfb it rests in the
  // middle of the screen and would leave a tooltip in every screenshot.
  if (script_.active()) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  // --press: a key down for this frame, as the platform would have set it.
  if (pressed_key_ >= 0) ImGui::GetIO().KeysDown[pressed_key_] = false;
  pressed_key_ = script_.take_key();
  if (pressed_key_ >= 0) ImGui::GetIO().KeysDown[pressed_key_] = true;
  ImGui::NewFrame();
  const ImGuiIO& io = ImGui::GetIO();
  if (io.MouseDelta.x != 0 || io.MouseDelta.y != 0 || io.MouseWheel != 0 ||
      ImGui::IsAnyMouseDown() || io.InputQueueCharacters.Size > 0 || ImGui::IsAnyItemActive()) {
    pacer_.keep_lively(begin + 0.5);  // someone is using the window: answer at the frame cap
  }
  report_.begin_frame();
  frame_words_.clear();
  if (options_.screenshot_wanted && !screenshot_requested_) {
    if (std::string path = options_.screenshot_wanted(); !path.empty()) {
      screenshot_path_ = std::move(path);
      screenshot_requested_ = true;
    }
  }
  handle_keys();
  draw_menu_bar();
  FrameContext frame = frame_context();
  draw_panels(frame);
  report_.note("presenter_layout", view_.present ? 1 : 0);
  if (view_.show_imgui_metrics) ImGui::ShowMetricsWindow(&view_.show_imgui_metrics);
  ImGui::Render();

  int width = 0, height = 0;
  window_->framebuffer_size(&width, &height);
  ImDrawData* draw_data = ImGui::GetDrawData();
  const std::uint64_t fingerprint = frame_fingerprint(*draw_data, width, height);
  // Exposed or resized, the window draws its next frame whatever it is.
  if (!window_->take_exposed() && fingerprint == last_fingerprint_ && !screenshot_requested_) {
    return;  // the window shows this very picture already
  }
  last_fingerprint_ = fingerprint;
  ++stats_.frames_drawn;
  window_->draw(draw_data);
  stats_.draw_calls = 0;
  for (int i = 0; i < draw_data->CmdListsCount; ++i)
    stats_.draw_calls += draw_data->CmdLists[i]->CmdBuffer.Size;
  stats_.vertices = draw_data->TotalVtxCount;
  if (screenshot_requested_) {
    screenshot_requested_ = false;
    if (screenshot_path_.empty()) {
      screenshot_path_ = next_screenshot_path("", &screenshots_taken_).string();
    }
    const std::string problem = write_screenshot(screenshot_path_);
    if (!problem.empty()) screenshot_failed_ = true;
    if (options_.screenshot_done) options_.screenshot_done(screenshot_path_, problem);
    screenshot_path_.clear();
  }
  window_->show();  // waits for the software rasterizer to finish the frame
  stats_.draw_seconds.push_back(now_seconds() - begin);
}

// For the report: the frame's text cut off or broken (gui/window/text_audit.h), the latest frame's.
void AppWindow::note_text_out_of_place(const ImDrawData& draw_data) {
  const TextAudit audit = audit_text(draw_data, *ImGui::GetIO().Fonts, frame_words_);
  report_.note("glyphs", audit.glyphs);
  report_.note("text_cut", static_cast<double>(audit.cut.size()));
  report_.note("numbers_broken", static_cast<double>(audit.broken_numbers.size()));
  report_.note("text_in_part", static_cast<double>(audit.in_part.size()));
  const auto joined = [](const std::vector<std::string>& lines) {
    std::string all;
    for (const std::string& line : lines) all.append(all.empty() ? "" : "\n").append(line);
    return all;
  };
  report_.words("text cut", joined(audit.cut));
  report_.words("numbers broken", joined(audit.broken_numbers));
  report_.words("text in part", joined(audit.in_part));
}

std::string AppWindow::write_screenshot(const std::string& path) {
  int width = 0, height = 0;
  window_->framebuffer_size(&width, &height);
  const bool say = !options_.screenshot_done;  // else the face that asked says it
  try {
    write_framebuffer_picture(path, width, height);
    if (say) std::printf("Screenshot written to %s (%dx%d)\n", path.c_str(), width, height);
    return "";
  } catch (const std::exception& e) {
    if (say) std::fprintf(stderr, "mirrorlab gui: %s\n", e.what());
    return e.what();
  }
}

// ============================================================================================
// The frame loop
// ============================================================================================

int AppWindow::run() {
  if (options_.window_opened) options_.window_opened();
  script_.start(session(), compare_);
  while (!window_->should_close()) {
    const double frame_start = now_seconds();
    stats_.frame_started(frame_start);
    pacer_.take_events(*window_, frame_start);
    draw_frame();
    pacer_.wait_for_next_frame();
    const double since_start = now_seconds() - start_;
    if ((options_.quit_after_seconds > 0 && since_start > options_.quit_after_seconds) ||
        (options_.close_requested && options_.close_requested())) {
      window_->close();  // as if the user closed it, mid-run
    }
    if (!script_.active()) continue;
    // A lesson's step still being played, or the strip still fitting itself to what it shows:
    // a key pressed or a picture taken now would meet a layout about to change.
    const bool settling = lesson_ && (lesson_->busy() || lesson_->settling() || strip_refitted_);
    const ScriptStep next =
        script_.after_frame(since_start, snapshot_, session(), stats_, report_, settling);
    if (next == ScriptStep::kGoOn) continue;
    const bool more_steps = options_.every_step && lesson_ && lesson_->playing() &&
                            lesson_->step_number() < lesson_->step_count();
    const int step = lesson_ ? lesson_->step_number() : 0;
    if (next == ScriptStep::kScreenshotThenDone) {  // drawn whatever, read before shown
      screenshot_path_ =
          options_.every_step ? path_for_step(options_.screenshot, step) : options_.screenshot;
      screenshot_requested_ = true;
      window_->poll_events();
      draw_frame();
    }
    if (!more_steps || script_.timed_out()) break;  // a step past its time ends the script
    // --every-step: this step's report, then the next step from a report and counts of its own.
    if (!write_step_report(path_for_step(options_.report, step))) step_report_failed_ = true;
    report_ = GuiReport{};
    stats_.restart();
    lesson_->next();
    script_.next_lesson_step(now_seconds() - start_);
  }
  // A watched run may have gone on since the last frame (closed right after a fit): its report
  // tells the run as it was at the close.
  if (watched_ != nullptr && !options_.report.empty()) {
    snapshot_.stepping = false;  // copied whatever the refresh rate
    draw_frame();
  }
  int status = script_.finish(snapshot_, setup_error(), screenshot_failed_);
  std::string report = options_.report;
  if (options_.every_step && lesson_) {
    report = path_for_step(options_.report, lesson_->step_number());
    // Closed (or timed out) before the last step was played: the script did not do what it asked.
    if (lesson_->step_number() < lesson_->step_count() || lesson_->busy()) {
      std::fprintf(stderr, "mirrorlab gui: --every-step ended in step %d of %d\n",
                   lesson_->step_number(), lesson_->step_count());
      status = 1;
    }
  }
  if (!write_step_report(report) || step_report_failed_) status = 1;
  return status;
}

bool AppWindow::write_step_report(const std::string& path) {
  // The last frame's text, audited once (its draw data stands until the next frame).
  if (!path.empty() && ImGui::GetDrawData() != nullptr) {
    note_text_out_of_place(*ImGui::GetDrawData());
  }
  return write_report(report_, stats_, snapshot_, !setup_error().empty(),
                      script_.measured_images_per_second(), path);
}

}  // namespace

std::string check_app_options(const AppOptions& options) {
  if (std::string problem = check_panel_name(options.panel, make_panels()); !problem.empty()) {
    return problem;
  }
  if (!options.screenshot.empty()) {
    if (std::string problem = picture_name_problem(options.screenshot); !problem.empty()) {
      return "--screenshot " + problem;
    }
  }
  if (options.modelled_allreduce.empty() && options.modelled_bytes != AppOptions{}.modelled_bytes) {
    return "--model-size needs --model-allreduce: the size of which all-reduce?";
  }
  if (options.topology.empty() && options.modelled_allreduce.empty() &&
      options.modelled_step == 0) {
    return "";  // nothing of the model asked for: a missing fit or preset is no reason to stop
  }
  TopologyCatalog machines;
  machines.add_file(options.topology);
  return check_model_choice(
      machines, options.topology.empty() ? ViewSettings{}.model_machine : options.topology,
      options.modelled_allreduce, static_cast<double>(options.modelled_bytes),
      options.modelled_step);
}

int run_app(std::shared_ptr<const core::FashionMnist> data, const core::SessionConfig& config,
            const AppOptions& options) {
  AppWindow window(std::move(data), config, options);
  return window.run();
}

int watch_run(core::TrainingSession& session, const AppOptions& options) {
  if (!session.watching()) {
    throw std::invalid_argument("watch_run() shows a watching session: give run_app() this one");
  }
  if (!options.lesson_file.empty() || options.steps > 0 || options.phases > 0 || options.compare ||
      options.measure_seconds > 0) {
    throw std::invalid_argument(
        "a watched run is trained by its driver: no lesson, steps, phases or measurement here");
  }
  AppWindow window(nullptr, session.config(), options, &session);
  return window.run();
}

}  // namespace mirrorlab::gui
