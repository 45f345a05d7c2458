#include "app/output/history_json.h"

namespace mirrorlab::app {
namespace {

nlohmann::json metrics_json(const core::Metrics& m) {
  return {{"loss", m.loss},
          {"accuracy", m.accuracy},
          {"top5_accuracy", m.top5_accuracy},
          {"examples", m.examples}};
}

}  // namespace

nlohmann::json to_json(const RunSummary& s) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const core::EpochLog& e : s.history->epochs) {
    nlohmann::json item = {{"epoch", e.epoch},
                           {"steps", e.steps},
                           {"loss", e.train.loss},
                           {"accuracy", e.train.accuracy},
                           {"top5_accuracy", e.train.top5_accuracy},
                           {"seconds", e.seconds}};
    if (e.has_validation) {
      item["val_loss"] = e.validation.loss;
      item["val_accuracy"] = e.validation.accuracy;
      item["val_top5_accuracy"] = e.validation.top5_accuracy;
    }
    epochs.push_back(item);
  }
  nlohmann::json phases = nlohmann::json::object();
  for (std::size_t d = 0; d < s.device_names.size(); ++d) {
    nlohmann::json per_phase = nlohmann::json::object();
    for (int p = 0; p < core::kNumPhases; ++p) {
      const double seconds = d < s.phase_seconds.size() ? s.phase_seconds[d][p] : 0.0;
      per_phase[core::to_string(static_cast<core::Phase>(p))] = seconds;
    }
    phases[s.device_names[d]] = per_phase;
  }
  nlohmann::json memory = nlohmann::json::object();
  for (std::size_t d = 0; d < s.device_names.size() && d < s.peak_memory_bytes.size(); ++d) {
    memory[s.device_names[d]] = s.peak_memory_bytes[d];
  }
  const core::History& h = *s.history;
  nlohmann::json out = {
      {"config", s.config},
      {"epochs", epochs},
      {"steps", h.steps},
      {"stopped_by_max_steps", h.stopped_by_max_steps},
      {"final_train_loss", h.final_train_loss},
      {"weights_l2", s.weights_l2},
      {"test", metrics_json(s.test)},
      {"train_seconds", h.train_seconds},
      {"images_per_second",
       h.train_seconds > 0 ? static_cast<double>(h.train_examples) / h.train_seconds : 0.0},
      {"phase_seconds", phases},
      {"peak_memory_bytes", memory},
      {"stopped",
       {{"reason", core::to_string(h.stop_reason)},
        {"after_step", h.steps},
        {"message", s.stop_message}}},
      {"warnings", s.warnings}};
  if (!s.workers.empty()) out["workers"] = s.workers;
  return out;
}

}  // namespace mirrorlab::app
