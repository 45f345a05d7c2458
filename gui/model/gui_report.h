// What each panel drew, for tests and scripted runs (`mirrorlab gui --report FILE`): a test can
// then check that the Devices panel drew one card per device, the Timeline one span per phase,
// and so on, instead of guessing from pixels alone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace mirrorlab::gui {

class GuiReport {
 public:
  void begin_frame() { ++frames_; }
  // Panel `panel` drew `count` of `what` (cards, lanes, spans, points) this frame; the report
  // keeps the latest count and how many frames the panel drew in.
  void drew(std::string_view panel, std::string_view what, double count);
  void note(std::string_view key, double value) { notes_[std::string(key)] = value; }
  // Words of the latest frame under `key`: a panel's text as drawn (its name), what a lesson's
  // step answered ("answer 1"). A test reads what a class could read.
  void words(std::string_view key, std::string text) { words_[std::string(key)] = std::move(text); }
  std::int64_t frames() const { return frames_; }
  bool panel_drew(std::string_view panel) const { return panels_.count(std::string(panel)) > 0; }

  // {"frames": N, "notes": {...}, "panels": {"Devices": {"frames": n, "cards": 2, ...}, ...},
  //  "words": {"Devices": "...", ...}}
  std::string to_json() const;
  void write(const std::filesystem::path& path) const;  // throws std::runtime_error

 private:
  struct PanelCounts {
    std::int64_t last_frame = -1, frames = 0;
    std::map<std::string, double> counts;
  };
  std::int64_t frames_ = 0;
  std::map<std::string, double> notes_;
  std::map<std::string, std::string> words_;
  std::map<std::string, PanelCounts> panels_;
};

}  // namespace mirrorlab::gui
