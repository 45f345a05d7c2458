#include "gui/model/gui_report.h"

#include "core/io/output_file.h"
#include "nlohmann/json.hpp"

namespace mirrorlab::gui {

void GuiReport::drew(std::string_view panel, std::string_view what, double count) {
  PanelCounts& p = panels_[std::string(panel)];
  if (p.last_frame != frames_) {
    p.last_frame = frames_;
    ++p.frames;
  }
  p.counts[std::string(what)] = count;
}

std::string GuiReport::to_json() const {
  nlohmann::json panels = nlohmann::json::object();
  for (const auto& [name, p] : panels_) {
    nlohmann::json j = p.counts;
    j["frames"] = p.frames;
    panels[name] = j;
  }
  return nlohmann::json{
      {"frames", frames_}, {"notes", notes_}, {"panels", panels}, {"words", words_}}
      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void GuiReport::write(const std::filesystem::path& path) const {
  core::write_file_whole(path, to_json() + "\n");
}

}  // namespace mirrorlab::gui
