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

// The text of each moment of a fit, to print as it is: each ends its line ("\n") or, live,
// redraws the current one ("\r...").
class KerasProgressText {
 public:
  explicit KerasProgressText(bool live) : live_(live) {}
  std::string epoch_begin(int epoch, int epochs);  // "Epoch 1/5\n"
  // The live bar's redraw, at most 10 times a second; "" when nothing is to be drawn.
  std::string batch_end(std::int64_t step_in_epoch, std::int64_t steps_per_epoch,
                        const Metrics& running, double epoch_seconds);
  std::string epoch_end(const EpochLog& log);
  // Ends a live line in the middle of an epoch, so a message can follow on its own ("" if none).
  std::string interrupt_line();

 private:
  bool live_;
  double last_draw_ = -1;
  std::size_t last_width_ = 0;
};

}  // namespace mirrorlab::core
