#include "core/session/text/keras_progress_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/session/text/console_text.h"

namespace mirrorlab::core {
namespace {

constexpr std::int64_t kBarWidth = 20;       // Keras 3's Progbar width
constexpr const char* kBarCell = "\u2501";   // ━
constexpr const char* kToGoCell = "\u2500";  // ─, where there is no colour to tell them apart

// Keras 3 orders a step's logs as model.fit fills them: the metrics, then the loss.
std::string metrics_text(const char* prefix, const Metrics& m, bool accuracy) {
  return (accuracy ? std::string(" - ") + prefix + "accuracy: " + format_metric(m.accuracy) : "") +
         " - " + prefix + "loss: " + format_metric(m.loss);
}

// The visible width of a line: its UTF-8 characters, not counting colour codes.
std::size_t visible_width(const std::string& s) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if (!continues_character(s[i])) ++width;
  }
  return width;
}

}  // namespace

std::string format_duration_per_step(double s) {
  char text[32];
  if (s >= 1.0 || s == 0.0) {
    std::snprintf(text, sizeof text, "%.0fs/step", s);
  } else if (s >= 1e-3) {
    std::snprintf(text, sizeof text, "%.0fms/step", s * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0fus/step", s * 1e6);
  }
  return text;
}

std::string format_metric(double value) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(value) > 1e-3 ? "%.4f" : "%.4e", value);
  return text;
}

std::string format_eta(double seconds) {
  char text[32];
  const long s = static_cast<long>(std::max(0.0, seconds));
  if (seconds > 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, (s % 3600) / 60, s % 60);
  } else if (seconds > 60) {
    std::snprintf(text, sizeof text, "%ld:%02ld", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lds", s);
  }
  return text;
}

std::string progress_bar(std::int64_t done, std::int64_t total, bool colour) {
  const std::string t = std::to_string(total);
  std::string counter = std::to_string(done);
  if (counter.size() < t.size()) counter.insert(0, t.size() - counter.size(), ' ');
  const std::int64_t filled =
      total > 0 ? std::clamp(kBarWidth * done / total, std::int64_t{0}, kBarWidth) : kBarWidth;
  std::string bar = bold(counter + "/" + t, colour) + " ";
  if (!colour) return bar + repeat(kBarCell, filled) + repeat(kToGoCell, kBarWidth - filled);
  if (filled > 0) bar += "\x1b[32m" + repeat(kBarCell, filled) + "\x1b[0m";
  return bar + "\x1b[37m" + repeat(kBarCell, kBarWidth - filled) + "\x1b[0m";
}

std::string KerasProgressText::epoch_begin(int epoch, int epochs) {
  last_draw_ = -1;
  last_width_ = 0;
  if (epochs <= 1) return "";
  return "Epoch " + std::to_string(epoch) + "/" + std::to_string(epochs) + "\n";
}

std::string KerasProgressText::batch_end(std::int64_t step, std::int64_t steps,
                                         const Metrics& running, double seconds) {
  if (!live() || step == steps) return "";    // the final line comes from epoch_end
  if (seconds - last_draw_ < 0.1) return "";  // redraw at most 10 times a second
  last_draw_ = seconds;
  const double per_step = seconds / static_cast<double>(step);
  std::string line = progress_bar(step, steps, true) + " " +
                     bold(format_eta(per_step * static_cast<double>(steps - step)), true) + " " +
                     format_duration_per_step(per_step) +
                     metrics_text("", running, style_.accuracy);
  const std::size_t width = visible_width(line);
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  return "\r" + line;
}

std::string KerasProgressText::interrupt_line() {
  if (!live() || last_width_ == 0) return "";
  last_width_ = 0;
  return "\n";
}

std::string KerasProgressText::final_line(std::int64_t steps, std::int64_t total, double seconds,
                                          const Metrics* metrics) {
  const double per_step = steps > 0 ? seconds / static_cast<double>(steps) : 0.0;
  const std::string took = std::to_string(std::lround(seconds)) + "s";
  const std::string after = metrics ? metrics_text("", *metrics, style_.accuracy) : "";
  if (style_.one_line) {  // "469/469 - 12s - 26ms/step - accuracy: ..."
    return std::to_string(steps) + "/" + std::to_string(total) + " - " + took + " - " +
           format_duration_per_step(per_step) + after;
  }
  return progress_bar(steps, total, live()) + " " + bold(took, live()) + " " +
         format_duration_per_step(per_step) + after;
}

std::string KerasProgressText::epoch_end(const EpochLog& log) {
  std::string line = final_line(log.steps, log.steps_per_epoch, log.seconds, &log.train);
  if (log.has_validation) line += metrics_text("val_", log.validation, style_.accuracy);
  const std::size_t width = visible_width(line);
  if (live() && width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = 0;
  return (live() ? "\r" : "") + line + "\n";
}

std::string KerasProgressText::evaluate_end(std::int64_t steps, double seconds,
                                            const Metrics& metrics) {
  last_width_ = 0;
  return final_line(steps, steps, seconds, &metrics) + "\n";
}

std::string KerasProgressText::predict_end(std::int64_t steps, double seconds) {
  last_width_ = 0;
  return final_line(steps, steps, seconds, nullptr) + "\n";
}

}  // namespace mirrorlab::core
