// The presenter layout's caption strip (gui/panels/panel_layout.h) fitted to what it and the
// panels above it hold: a step whose text and questions need more than the strip's share grows
// the strip into the room the panels above leave empty, and one needing less gives the panels
// that room when they need it. Measured after each frame, fitted for the next; a new step, panel
// or window size starts again from the share, as does a step's run once the class has predicted
// (the panels above had only a sentence to show until then).
#pragma once

namespace mirrorlab::gui {

// The most of the work area's height a fitted strip may take: the step's panel keeps a quarter,
// unless it needs less and shows whole in less (StripFit::next).
inline constexpr float kMostCaptionStripShare = 0.75f;
// While a step waits for the class's predictions, panels that fill whatever room they get keep
// at least this share of the work area (else the room the strip's share leaves them): the
// question is what the class reads then, and the panel shows only where the step before left the
// run. Once the step runs, its panel has its usual room again.
inline constexpr float kAskingPanelsShare = 0.5f;
// Once the step has run, panels that fill whatever room they get keep this share of the work area
// when the strip needs the rest (else the room the strip's share leaves them), and at least
// kLeastPictureLines lines of text: the step's answers and explanations are read beside the
// picture they speak of. On a 1280x720 projector at font scale 1.5 the lines floor keeps the
// picture its three quarters; at 1920x1080 the strip gets four tenths.
inline constexpr float kAnsweredPanelsShare = 0.6f;
inline constexpr float kLeastPictureLines = 18;
// A step's fitting stops once the strip has turned back this many times (grown, then shrunk,
// then grown...: the panels and the strip trading room), whatever the panels do next, so that
// the text a class reads does not keep moving. Changes one way (answers appearing) all count as
// one.
inline constexpr int kMostStripTurns = 4;

// One frame's measures, in pixels.
struct StripMeasure {
  float base = 0;         // the strip's height by its share
  float total = 0;        // the work area's height: the strip's and the panels' together
  float strip = 0;        // the strip's height in the frame measured
  float strip_need = 0;   // the height showing the step's text and questions whole (0: unknown)
  float panels_need = 0;  // the panels' room that shows every panel above whole: at least their
                          // room at the share where one fills whatever room it gets
  float line = 0;         // a line of text: less spare room than that is none
  // While a step asks: the room kept by panels that fill whatever they get (0: the room the
  // strip's share leaves them, or what a panel beside them needs).
  float panels_least = 0;
};

class StripFit {
 public:
  void restart() { *this = StripFit{}; }
  // The strip's height for the next frame, from this frame's measures: 0 while it keeps its share.
  float next(const StripMeasure& m);
  float fitted() const { return fitted_; }  // what next() last gave (0: the share)
  int refits() const { return refits_; }    // changes of height since restart()
  int turns() const { return turns_; }      // of them, those that went back the other way
  // Whether the panels were seen to fill whatever room they get (their need following their room
  // pixel for pixel, as a chart's sized to its window does, unsaid): then they keep the room the
  // share gives them.
  bool panels_fill() const { return panels_fill_; }

 private:
  float fitted_ = 0;
  int refits_ = 0;
  int turns_ = 0;
  int last_direction_ = 0;  // +1: the last change grew the strip, -1: shrank it
  bool panels_fill_ = false;
  float last_room_ = -1, last_panels_need_ = -1;
};

}  // namespace mirrorlab::gui
