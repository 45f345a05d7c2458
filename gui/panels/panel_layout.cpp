#include "gui/panels/panel_layout.h"

#include <algorithm>

#include "files/field_words.h"
#include "gui/panels/all_reduce/all_reduce_panel.h"
#include "gui/panels/compare/compare_panel.h"
#include "gui/panels/step/batch_split_panel.h"
#include "gui/panels/step/devices_panel.h"
#include "gui/panels/step/gradients_panel.h"
#include "gui/panels/step/timeline_panel.h"
#include "gui/panels/step/training_panel.h"

namespace mirrorlab::gui {

std::vector<std::unique_ptr<Panel>> make_panels() {
  std::vector<std::unique_ptr<Panel>> panels;
  panels.push_back(std::make_unique<DevicesPanel>());
  panels.push_back(std::make_unique<BatchSplitPanel>());
  panels.push_back(std::make_unique<GradientsPanel>());
  panels.push_back(std::make_unique<AllReducePanel>());
  panels.push_back(std::make_unique<TrainingPanel>());
  panels.push_back(std::make_unique<TimelinePanel>());
  panels.push_back(std::make_unique<ComparePanel>());
  return panels;
}

std::string unknown_panel(const std::string& name,
                          const std::vector<std::unique_ptr<Panel>>& panels) {
  if (name.empty()) return "";
  std::string names;
  std::vector<std::string> all;
  for (const auto& p : panels) {
    if (name == p->name()) return "";
    names += std::string(names.empty() ? "" : ", ") + p->name();
    all.push_back(p->name());
  }
  return "no such panel" + files::field_words::did_you_mean(name, all) + "; the panels are " +
         names;
}

std::string check_panel_name(const std::string& name,
                             const std::vector<std::unique_ptr<Panel>>& panels) {
  const std::string problem = unknown_panel(name, panels);
  return problem.empty() ? "" : "--panel " + name + ": " + problem;
}

const std::vector<LayoutRow>& layout() {
  static const std::vector<LayoutRow> rows = {
      {0.33f, {{"Devices", 0.34f}, {"Batch split", 0.66f}}},
      {0.40f, {{"Gradients", 0.40f}, {"All-reduce", 0.37f}, {"Training", 0.23f}}},
      {0.27f, {{"Timeline", 0.62f}, {"Compare", 0.38f}}},
  };
  return rows;
}

WindowLayout arrange_window(PixelRect work, float window_height, float font_scale, bool lesson,
                            bool present, bool tall_caption, float strip_px) {
  WindowLayout out;
  if (present) {
    const float share = tall_caption ? kTallCaptionStripShare : kCaptionStripShare;
    float strip = std::min(share * window_height, work.h * 0.6f);
    if (strip_px > 0) strip = std::min(strip_px, work.h);
    if (!lesson) strip = 0;
    out.panels = PixelRect{work.x, work.y, work.w, work.h - strip};
    if (lesson) out.lesson = PixelRect{work.x, work.y + work.h - strip, work.w, strip};
    out.lesson_is_strip = lesson;
    return out;
  }
  const float controls = std::min(330.0f * font_scale, work.w * 0.3f);
  out.controls = PixelRect{work.x, work.y, controls, work.h};
  float lesson_width = 0;
  if (lesson) {  // reads in a column on the right
    lesson_width =
        std::clamp(work.w * 0.3f, std::min(380.0f * font_scale, work.w * 0.42f), work.w * 0.42f);
    out.lesson = PixelRect{work.x + work.w - lesson_width, work.y, lesson_width, work.h};
  }
  out.panels = PixelRect{work.x + controls, work.y, work.w - controls - lesson_width, work.h};
  return out;
}

std::vector<std::pair<std::string, Rect>> place_panels(const std::vector<std::string>& present) {
  const auto here = [&](const char* name) {
    return std::find(present.begin(), present.end(), name) != present.end();
  };
  float total_height = 0;
  for (const LayoutRow& row : layout()) {
    if (std::any_of(row.cells.begin(), row.cells.end(), [&](auto& c) { return here(c.panel); })) {
      total_height += row.height;
    }
  }
  std::vector<std::pair<std::string, Rect>> placed;
  float y = 0;
  for (const LayoutRow& row : layout()) {
    float total_width = 0;
    for (const LayoutCell& c : row.cells) total_width += here(c.panel) ? c.width : 0;
    if (total_width == 0) continue;
    const float h = row.height / total_height;
    float x = 0;
    for (const LayoutCell& c : row.cells) {
      if (!here(c.panel)) continue;
      placed.push_back({c.panel, Rect{x, y, c.width / total_width, h}});
      x += c.width / total_width;
    }
    y += h;
  }
  return placed;
}

}  // namespace mirrorlab::gui
