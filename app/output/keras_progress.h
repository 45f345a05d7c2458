// Keras 3's progress on a FILE (the command line's stdout): the text of
// core/session/text/keras_progress_text.h, printed as each moment of the fit comes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/session/text/keras_progress_text.h"
#include "core/strategy/fit.h"

namespace mirrorlab::app {

class KerasProgress : public core::FitCallback {
 public:
  // `live`: a redrawn bar with colours (a terminal); else the epochs' final lines only.
  KerasProgress(std::FILE* out, bool live) : out_(out), text_(live) {}
  void on_epoch_begin(int epoch, int epochs, std::int64_t steps_per_epoch) override;
  void on_batch_end(int epoch, std::int64_t step_in_epoch, std::int64_t steps_per_epoch,
                    const core::Metrics& running, double epoch_seconds) override;
  void on_epoch_end(const core::EpochLog& log) override;
  // Ends a live progress line in the middle of an epoch, so a message can follow on its own.
  void interrupt_line();

 private:
  void print(const std::string& text);
  std::FILE* out_;
  core::KerasProgressText text_;
};

}  // namespace mirrorlab::app
