#include "app/keras_progress.h"

#include <algorithm>
#include <cmath>

namespace mirrorlab::app {
namespace {

std::string counter(std::int64_t done, std::int64_t total) {
  const std::string t = std::to_string(total);
  std::string d = std::to_string(done);
  if (d.size() < t.size()) d.insert(0, t.size() - d.size(), ' ');
  return d + "/" + t;
}

std::string metrics_text(const char* prefix, const core::Metrics& m) {
  char text[128];
  std::snprintf(text, sizeof text, " - %sloss: %.4f - %saccuracy: %.4f", prefix, m.loss, prefix,
                m.accuracy);
  return text;
}

}  // namespace

std::string format_duration_per_step(double s) {
  char text[32];
  if (s >= 1.0) {
    std::snprintf(text, sizeof text, "%.0fs/step", s);
  } else if (s >= 1e-3) {
    std::snprintf(text, sizeof text, "%.0fms/step", s * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0fus/step", s * 1e6);
  }
  return text;
}

std::string progress_bar(std::int64_t done, std::int64_t total) {
  // Keras: '=' for the part done, its last one drawn as '>' while the epoch is still running.
  constexpr std::int64_t kWidth = 30;
  const std::int64_t filled = total > 0 ? std::min(kWidth, kWidth * done / total) : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (done < total && filled > 0) bar.back() = '>';
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  return "[" + bar + "]";
}

KerasProgress::KerasProgress(std::FILE* out, bool live) : out_(out), live_(live) {}

void KerasProgress::on_epoch_begin(int epoch, int epochs, std::int64_t) {
  std::fprintf(out_, "Epoch %d/%d\n", epoch, epochs);
  std::fflush(out_);
  last_draw_ = -1;
  last_width_ = 0;
}

void KerasProgress::on_batch_end(int, std::int64_t step, std::int64_t steps,
                                 const core::Metrics& running, double seconds) {
  if (!live_ || step == steps) return;      // the final line comes from on_epoch_end
  if (seconds - last_draw_ < 0.1) return;   // redraw at most 10 times a second
  last_draw_ = seconds;
  const double eta = seconds / static_cast<double>(step) * static_cast<double>(steps - step);
  std::string line = counter(step, steps) + " " + progress_bar(step, steps) +
                     " - ETA: " + std::to_string(static_cast<long>(std::lround(eta))) + "s" +
                     metrics_text("", running);
  const std::size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
}

void KerasProgress::interrupt_line() {
  if (!live_ || last_width_ == 0) return;
  std::fprintf(out_, "\n");
  last_width_ = 0;
}

void KerasProgress::on_epoch_end(const core::EpochLog& log) {
  std::string line = counter(log.steps, log.steps_per_epoch) + " " +
                     progress_bar(log.steps, log.steps_per_epoch) + " - " +
                     std::to_string(static_cast<long>(std::lround(log.seconds))) + "s " +
                     format_duration_per_step(log.seconds / static_cast<double>(log.steps)) +
                     metrics_text("", log.train);
  if (log.has_validation) line += metrics_text("val_", log.validation);
  if (live_ && line.size() < last_width_) line.append(last_width_ - line.size(), ' ');
  std::fprintf(out_, "%s%s\n", live_ ? "\r" : "", line.c_str());
  std::fflush(out_);
}

}  // namespace mirrorlab::app
