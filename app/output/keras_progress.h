// Keras 3's progress (what model.fit(verbose=1) prints in TensorFlow 2.21, checked by
// scripts/check-tensorflow): "Epoch 1/5", a live bar while an epoch runs (on a terminal), then
//   469/469 ━━━━━━━━━━━━━━━━━━━━ 12s 26ms/step - accuracy: 0.8512 - loss: 0.4123
//   - val_accuracy: 0.8400 - val_loss: 0.4500
// On a terminal the bar is coloured as Keras colours it (green done, grey to go). When stdout is
// not a terminal (a log, CI) only the final line of each epoch is printed, without colour codes,
// and the part of the bar still to go is drawn '─' (Keras writes colour codes into logs too, and
// redraws the bar there).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/strategy/fit.h"

namespace mirrorlab::app {

std::string format_duration_per_step(double seconds_per_step);  // "26ms/step", "850us/step"
std::string format_metric(double value);                        // Keras: "0.4123", "2.0000e-04"
// " 5/24 ━━━━━━━━━━━━━━━━━━━━": the counter and Keras' 20-wide bar; `colour`: Keras' ANSI codes.
std::string progress_bar(std::int64_t done, std::int64_t total, bool colour);
// Keras' estimate of the time left: "14s", "2:05", "1:02:05".
std::string format_eta(double seconds);

class KerasProgress : public core::FitCallback {
 public:
  explicit KerasProgress(std::FILE* out, bool live);
  void on_epoch_begin(int epoch, int epochs, std::int64_t steps_per_epoch) override;
  void on_batch_end(int epoch, std::int64_t step_in_epoch, std::int64_t steps_per_epoch,
                    const core::Metrics& running, double epoch_seconds) override;
  void on_epoch_end(const core::EpochLog& log) override;
  // Ends a live progress line in the middle of an epoch, so a message can follow on its own.
  void interrupt_line();

 private:
  std::FILE* out_;
  bool live_;
  double last_draw_ = -1;
  std::size_t last_width_ = 0;
};

}  // namespace mirrorlab::app
