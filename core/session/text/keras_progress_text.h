// Keras 3's progress as text (what model.fit(verbose=1) prints in TensorFlow 2.21, checked by
// scripts/check-tensorflow): "Epoch 1/5", a live bar while an epoch runs (on a terminal or in a
// notebook), then
//   469/469 ━━━━━━━━━━━━━━━━━━━━ 12s 26ms/step - accuracy: 0.8512 - loss: 0.4123
//   - val_accuracy: 0.8400 - val_loss: 0.4500
// Live, the bar is coloured as Keras colours it (green done, grey to go). Not live (a log, CI)
// only the final line of each epoch comes, without colour codes, and the part of the bar still to
// go is drawn '─' (Keras writes colour codes into logs too, and redraws the bar there). The faces
// print these lines: the command line on its stdout, the Python module on Python's.
#pragma once

#include <cstdint>
#include <string>

#include "core/strategy/fit.h"

namespace mirrorlab::core {

std::string format_duration_per_step(double seconds_per_step);  // "26ms/step", "850us/step"
std::string format_metric(double value);                        // Keras: "0.4123", "2.0000e-04"
// " 5/24 ━━━━━━━━━━━━━━━━━━━━": the counter and Keras' 20-wide bar; `colour`: Keras' ANSI codes.
std::string progress_bar(std::int64_t done, std::int64_t total, bool colour);
// Keras' estimate of the time left: "14s", "2:05", "1:02:05".
std::string format_eta(double seconds);

// How Keras prints, by fit's and evaluate's `verbose` and what the model was compiled with
// (Keras 3.15, run): verbose=1 draws the bar (live on a terminal or in a notebook, else only each
// epoch's final line); verbose=2 writes one line an epoch, "469/469 - 12s - 26ms/step - ...".
struct KerasTextStyle {
  bool live = false;
  bool one_line = false;  // verbose=2
  bool accuracy = true;   // compiled with metrics=["accuracy"]; else the loss alone
};

// The text of each moment of a fit, to print as it is: each ends its line ("\n") or, live,
// redraws the current one ("\r...").
class KerasProgressText {
 public:
  explicit KerasProgressText(bool live) : style_{live} {}
  explicit KerasProgressText(KerasTextStyle style) : style_(style) {}
  // "Epoch 1/5\n"; "" for a fit of one epoch, as Keras writes none then.
  std::string epoch_begin(int epoch, int epochs);
  // The live bar's redraw, at most 10 times a second; "" when nothing is to be drawn.
  std::string batch_end(std::int64_t step_in_epoch, std::int64_t steps_per_epoch,
                        const Metrics& running, double epoch_seconds);
  std::string epoch_end(const EpochLog& log);
  // model.evaluate's line over `steps` batches: the epoch's line without validation.
  std::string evaluate_end(std::int64_t steps, double seconds, const Metrics& metrics);
  // model.predict's line over `steps` batches: evaluate's without metrics.
  std::string predict_end(std::int64_t steps, double seconds);
  // Ends a live line in the middle of an epoch, so a message can follow on its own ("" if none).
  std::string interrupt_line();

 private:
  // The line that ends an epoch, an evaluation (with its metrics) or a prediction (nullptr).
  std::string final_line(std::int64_t steps, std::int64_t total, double seconds,
                         const Metrics* metrics);
  bool live() const { return style_.live && !style_.one_line; }

  KerasTextStyle style_;
  double last_draw_ = -1;
  std::size_t last_width_ = 0;
};

}  // namespace mirrorlab::core
