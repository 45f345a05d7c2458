#include "app/output/keras_progress.h"

namespace mirrorlab::app {

void KerasProgress::print(const std::string& text) {
  if (!text.empty()) std::fputs(text.c_str(), out_);
  std::fflush(out_);  // with nothing to add too: what came before shows when the epoch begins
}

void KerasProgress::on_epoch_begin(int epoch, int epochs, std::int64_t) {
  print(text_.epoch_begin(epoch, epochs));
}

void KerasProgress::on_batch_end(int, std::int64_t step, std::int64_t steps,
                                 const core::Metrics& running, double seconds) {
  print(text_.batch_end(step, steps, running, seconds));
}

void KerasProgress::interrupt_line() { print(text_.interrupt_line()); }

void KerasProgress::on_epoch_end(const core::EpochLog& log) { print(text_.epoch_end(log)); }

}  // namespace mirrorlab::app
