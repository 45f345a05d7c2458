// What a presenter's clicker does in a lesson. A clicker sends Page Down and Page Up and nothing
// else, so a lecturer holding one cannot scroll, press T or click "Run the step and show me".
// Measured at 1280x720, font scale 1.5, 45 of the 47 steps hide part of their text or questions
// below the caption strip's edge; with Page Down going straight to the next step, a lecturer at
// the front had to walk back to the laptop to read them, and could skip a step's run unseen.
// So Page Down goes through a lesson as a clicker goes through slides with builds: a page more of
// the step (both columns, each by its own page) while anything is hidden below, then the step's
// run (when it waits for predictions), then the next step. Page Up goes back a page while a
// column is scrolled, else to the step before. The Back / Next buttons still go straight to a
// step.
#pragma once

#include <span>

namespace mirrorlab::gui {

// Where a step is: its questions wait for predictions, then its actions run, then the answers
// and checks show.
enum class StepStage { kAsking, kRunning, kDone };

// A scrolling column of the lesson as last drawn: how far it is scrolled, how far it can be, and
// how much it shows at once.
struct ColumnScroll {
  float y = 0;
  float max = 0;
  float shown = 0;  // the visible height
};

struct ClickerState {
  std::span<const ColumnScroll> columns;
  StepStage stage = StepStage::kDone;
  bool introduction = false;  // the lesson's introduction is shown instead of the step
  bool has_next = false;      // a step after this one
  bool has_back = false;      // a step before this one
};

enum class ClickerMove {
  kNone,               // nothing to do (the step is running, or the lesson's end is read)
  kPageDown,           // scroll each column not at its end a page down
  kPageUp,             // scroll each column not at its top a page up
  kRunStep,            // "Run the step and show me"
  kCloseIntroduction,  // back from the introduction to the step
  kNextStep,
  kBackStep,
};

ClickerMove clicker_forward(const ClickerState& state);  // Page Down
ClickerMove clicker_back(const ClickerState& state);     // Page Up

// Whether a column hides something below (or above) what it shows.
bool hides_below(const ColumnScroll& column);
bool hides_above(const ColumnScroll& column);

// Where a column scrolls to for a page down (pages = 1) or up (-1): its visible height less
// `overlap` (a line, so that the reader keeps their place), and at least `overlap`, within 0 and
// its end.
float paged_scroll(const ColumnScroll& column, int pages, float overlap);

}  // namespace mirrorlab::gui
