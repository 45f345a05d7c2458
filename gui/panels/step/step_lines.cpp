#include "gui/panels/step/step_lines.h"

#include <algorithm>
#include <cstdio>

#include "core/session/step_figures.h"
#include "gui/drawing/wrapped_text.h"
#include "gui/panels/lesson_asks.h"

namespace mirrorlab::gui {

std::string shards_line(const core::RecordedStep& record) {
  if (record.step < 0 || record.replicas.empty()) return "";
  std::string line = "Examples per replica:";
  for (std::size_t r = 0; r < record.replicas.size(); ++r) {
    line.append(r == 0 ? " " : ", ").append(record.replicas[r].device);
    line.append(" ").append(std::to_string(record.replicas[r].shard_count));
  }
  return line;
}

std::string reference_distance_line(const FrameContext& frame) {
  if (frame.view.distance_to_one_worker && frame.run.workers.size() > 1) {
    return formatted(
        "Against one worker of %d devices trained on the same batches, the largest weight "
        "difference is %.3g.",
        frame.run.replicas_in_sync, *frame.view.distance_to_one_worker);
  }
  if (frame.view.distance_to_one_device && frame.run.workers.size() <= 1) {
    return formatted(
        "Against one device trained on the same batches, the largest weight difference is %.3g.",
        *frame.view.distance_to_one_device);
  }
  return "";
}

std::string gradient_weight_line(const FrameContext& frame) {
  if (frame.run.workers.size() > 1) return "";
  const auto weight =
      core::gradient_weight(frame.run.step_record, frame.config.settings.loss_scaling);
  if (!weight) return "";
  char weighs[32];
  std::snprintf(weighs, sizeof weighs, "%.3g", *weight);
  char text[200];
  std::snprintf(text, sizeof text,
                "The summed gradient weighs %s x one device's mean gradient on this batch "
                "(loss scaling %s)",
                blank_if_asked(frame, "gradient_scale", weighs).c_str(),
                core::to_string(frame.config.settings.loss_scaling));
  return text;
}

std::string step_time_line(const core::SessionSnapshot& run) {
  const auto ms = core::mean_step_ms(run.steps);
  if (!ms) return "";
  const std::size_t n = std::min<std::size_t>(run.steps.size(), 20);
  char text[120];
  if (n == 1) {
    std::snprintf(text, sizeof text, "A step takes %.3g ms (the one step so far)", *ms);
  } else {
    std::snprintf(text, sizeof text, "A step takes %.3g ms (the mean of the last %zu)", *ms, n);
  }
  return text;
}

}  // namespace mirrorlab::gui
