// The Lesson panel (`mirrorlab gui --lesson ID`): plays a lesson file as `mirrorlab lesson run`
// does (lessons/player), in a column beside the other panels. Each step sets its run up, asks
// its questions before anything runs, then drives its actions while the panels show the run,
// highlights the panel the step talks about, reveals the answers and shows the checks as they
// pass. Back and forward go through the steps (the buttons); Page Down and Page Up (what a
// presenter's clicker sends) go through each step's pages and its run too.
//
// While a lesson plays, the window shows the lesson's run instead of its own. Applying settings
// of one's own in the Controls leaves the lesson (the panel offers the way back).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/dataset.h"
#include "core/session/training_session.h"
#include "gui/panels/panel.h"

namespace mirrorlab::gui {

class LessonPanel : public Panel {
 public:
  const char* name() const override { return "Lesson"; }

  // Whether the window shows the lesson's run (else its own).
  virtual bool playing() const = 0;
  // The lesson's run: nullptr when its setup could not be built (setup_error() says why).
  virtual core::TrainingSession* session() = 0;
  virtual const core::SessionConfig& config() const = 0;
  virtual const std::string& setup_error() const = 0;
  // Counts the runs the lesson has built: a new number, a new run.
  virtual std::uint64_t run_number() const = 0;
  // Once per frame, before anything is drawn: enters a step asked for, drives the step's
  // actions, and sets what the window highlights (view.highlighted_panel, the chosen device).
  virtual void advance(ViewSettings& view) = 0;
  virtual void leave() = 0;  // the user applied settings of their own
  virtual void next() = 0;   // to the next step (on the next advance())
  virtual void back() = 0;
  // What a presenter's clicker does (Page Down, Page Up): a page more of the step while it hides
  // some below, then its run (when it waits for predictions), then the next step; back a page,
  // then a step (gui/panels/lesson/clicker.h).
  virtual void page_down() = 0;
  virtual void page_up() = 0;
  // A step still being set up or run, or a question waiting (a scripted run waits for this).
  virtual bool busy() const = 0;
  // The step's columns still being laid out (a new step's first frames): a scripted run presses
  // no key and takes no picture until they show as much as the frame before.
  virtual bool settling() const = 0;
  // The step shown (from 1; the one asked for, once next() or back() asked), and how many the
  // lesson has.
  virtual int step_number() const = 0;
  virtual int step_count() const = 0;
  // The height the presenter layout's caption strip needs to show the step's text and what it
  // asks whole, as measured when last drawn as the strip (0 before that).
  virtual float strip_need_px() const = 0;
};

// How a lesson's steps go: as a class plays them (a step's questions wait for the class's
// predictions, then it runs), or scripted for pictures (`mirrorlab gui --screenshot`): each step
// run at once, its answers shown, or each shown as the class first sees it, the steps before it
// run and its questions waiting (--unanswered: a worksheet's pictures; a step that asks nothing
// runs). Scripted, nothing is waited for.
enum class LessonPace { kClass, kAnswered, kUnanswered };

// Reads the lesson `file` and makes its panel; its first advance() enters step `first_step`
// (1-based). The runs are built like `base` (its device maker: CPU-backed or CUDA) on `data`.
// Throws std::invalid_argument when the lesson cannot be played (malformed, coming, no such step,
// or this build has no lessons).
std::unique_ptr<LessonPanel> make_lesson_panel(const std::string& file, int first_step,
                                               LessonPace pace,
                                               std::shared_ptr<const core::FashionMnist> data,
                                               const core::SessionConfig& base);

}  // namespace mirrorlab::gui
