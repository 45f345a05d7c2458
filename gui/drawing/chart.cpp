#include "gui/drawing/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "gui/drawing/colors.h"
#include "imgui.h"

namespace mirrorlab::gui {
namespace {

std::string plain_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", v);
  return text;
}

// Dashes of `dash` pixels with gaps of half that.
void draw_dashed_line(ImDrawList* draw, ImVec2 a, ImVec2 b, std::uint32_t color, float dash) {
  const float length = std::hypot(b.x - a.x, b.y - a.y);
  if (length <= 0) return;
  const ImVec2 step((b.x - a.x) / length, (b.y - a.y) / length);
  for (float at = 0; at < length; at += dash * 1.5f) {
    const float end = std::min(at + dash, length);
    draw->AddLine(ImVec2(a.x + step.x * at, a.y + step.y * at),
                  ImVec2(a.x + step.x * end, a.y + step.y * end), color, 2.0f);
  }
}

}  // namespace

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, bytes < 10 && u > 0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

std::string format_seconds(double seconds) {
  const char* units[] = {"s", "ms", "\u00b5s", "ns"};
  int u = 0;
  while (std::abs(seconds) < 1 && seconds != 0 && u < 3) {
    seconds *= 1000;
    ++u;
  }
  char text[32];
  // Three figures, decided on the value as it will be rounded (9.999 shows as "10.0").
  const double size = std::abs(seconds);
  const char* format = size < 9.995 ? "%.2f %s" : size < 99.95 ? "%.1f %s" : "%.0f %s";
  std::snprintf(text, sizeof text, format, seconds, units[u]);
  return text;
}

namespace {

// Where a chart's data goes on the screen: its range (x through log2 on a log axis) and the
// plot's rectangle, from which a point's pixel follows.
struct ChartFrame {
  bool log_x = false;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  ImVec2 corner;   // the chart's top-left corner
  float line = 0;  // the text's line height: every margin is in lines
  float left = 0, right = 0, top = 0, bottom = 0;

  double fx(double x) const { return log_x ? std::log2(std::max(x, 1e-30)) : x; }
  float px(double x) const {
    return static_cast<float>(left + (fx(x) - x0) / (x1 - x0) * (right - left));
  }
  float py(double y) const {
    return static_cast<float>(bottom - (y - y0) / (y1 - y0) * (bottom - top));
  }
};

// The range of every finite point of `series`, widened where it is empty or flat, with room
// above the highest point. False when there is no point at all (then 0 to 1 on both axes).
bool fit_range(const std::vector<ChartSeries>& series, const ChartOptions& o, ChartFrame* f) {
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const ChartSeries& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, f->fx(s.x[i]));
      x1 = std::max(x1, f->fx(s.x[i]));
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  const bool empty = x0 > x1;
  if (empty) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (o.y_from_zero) y0 = std::min(0.0, y0);
  if (x1 - x0 < 1e-12) x1 = x0 + 1;
  if (y1 - y0 < 1e-12) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  f->x0 = x0, f->x1 = x1, f->y0 = y0, f->y1 = y1;
  return !empty;
}

// A series' entry in the legend: where it starts and its label as drawn, broken onto more lines
// where it is wider than the chart.
struct LegendEntry {
  ImVec2 at;
  std::string label;
};

// `label` broken at its spaces so that each line fits `room` pixels where it can (a word wider
// than that is a line of its own): "train,\nsmoothed".
std::string break_label(const std::string& label, float room) {
  std::string broken, line;
  std::size_t from = 0;
  while (from <= label.size()) {
    const std::size_t space = std::min(label.find(' ', from), label.size());
    const std::string word = label.substr(from, space - from);
    const std::string longer = line.empty() ? word : line + ' ' + word;
    if (!line.empty() && ImGui::CalcTextSize(longer.c_str()).x > room) {
      broken += line + '\n';
      line = word;
    } else {
      line = longer;
    }
    from = space + 1;
  }
  return broken + line;
}

// The legend runs after the y label and wraps onto more lines, from the chart's left edge, when
// the chart is narrow; a label wider than the chart breaks between its words. Each series' entry;
// the plot starts below them (f->top).
std::vector<LegendEntry> place_legend(const std::vector<ChartSeries>& series, const ChartOptions& o,
                                      ChartFrame* f) {
  std::vector<LegendEntry> legend;
  const float line = f->line;
  float lx = f->left + ImGui::CalcTextSize(o.y_label.c_str()).x + line, ly = f->corner.y;
  for (const ChartSeries& s : series) {
    const float w = line * 2 + ImGui::CalcTextSize(s.label.c_str()).x;
    // A line after the first starts at the chart's left edge: the y axis's labels are below.
    if (lx + w > f->right && lx > f->corner.x + line) lx = f->corner.x, ly += line;
    if (lx + w <= f->right) {
      legend.push_back({ImVec2(lx, ly), s.label});
      lx += w;
      continue;
    }
    const std::string broken = break_label(s.label, f->right - lx - line);
    legend.push_back({ImVec2(lx, ly), broken});
    ly += line * static_cast<float>(std::count(broken.begin(), broken.end(), '\n'));
    lx = f->right;  // the next entry starts a line of its own
  }
  f->top = ly + line * 1.3f;
  return legend;
}

// The grid, the ticks and their labels, the axes and their names.
void draw_axes(ImDrawList* draw, const ChartFrame& f, const ChartOptions& o) {
  const std::uint32_t axis = rgb(0x909098), grid = rgb(0x3A3A42);
  const float line = f.line;
  char text[64];
  // Up to 4 intervals on the y axis, fewer when the chart is too short for their labels.
  const int y_ticks = std::clamp(static_cast<int>((f.bottom - f.top) / (1.5f * line)), 1, 4);
  for (int t = 0; t <= y_ticks; ++t) {  // y ticks
    const double y = f.y0 + (f.y1 - f.y0) * t / y_ticks;
    draw->AddLine(ImVec2(f.left, f.py(y)), ImVec2(f.right, f.py(y)), grid);
    std::snprintf(text, sizeof text, o.y_format, y);
    draw_label(draw, ImVec2(f.corner.x, f.py(y) - line / 2), axis, text);
  }
  int x_ticks = std::clamp(static_cast<int>((f.right - f.left) / (6 * line)), 1, 4);
  // Whole numbers (steps) get no more ticks than there are numbers, so no label repeats.
  if (!o.log_x && o.x_format == nullptr) {
    x_ticks = std::clamp(static_cast<int>(f.x1 - f.x0), 1, x_ticks);
  }
  for (int t = 0; t <= x_ticks; ++t) {  // x ticks, as many as fit
    const double v = f.x0 + (f.x1 - f.x0) * t / x_ticks;
    const double x = o.log_x ? std::exp2(v) : v;
    const std::string label = o.x_format ? o.x_format(x) : plain_number(x);
    const float at = static_cast<float>(f.left + (v - f.x0) / (f.x1 - f.x0) * (f.right - f.left));
    const float w = ImGui::CalcTextSize(label.c_str()).x;
    draw_label(draw, ImVec2(std::clamp(at - w / 2, f.left, f.right - w), f.bottom + 2), axis,
               label.c_str());
  }
  draw->AddLine(ImVec2(f.left, f.bottom), ImVec2(f.right, f.bottom), axis);
  draw->AddLine(ImVec2(f.left, f.top), ImVec2(f.left, f.bottom), axis);
  draw_label(draw, ImVec2(f.left, f.corner.y), axis, o.y_label.c_str());
  const float xl = ImGui::CalcTextSize(o.x_label.c_str()).x;
  // Its own line under the ticks' labels: the last tick ("10") ends where it starts.
  draw_label(draw, ImVec2(f.right - xl, f.bottom + 2 + line), axis, o.x_label.c_str());
}

// One series' line (and markers), then its entry in the legend. Returns the
// segments and markers drawn.
int draw_series(ImDrawList* draw, const ChartFrame& f, const ChartSeries& s,
                const LegendEntry& entry, double* last_y) {
  const float line = f.line;
  int drawn = 0;
  const std::size_t n = std::min(s.x.size(), s.y.size());
  // About one point per pixel: a 10,000-step run draws as fast as a 500-step one; the last point
  // always, so that the curve ends where the run is.
  const std::size_t stride = std::max<std::size_t>(1, n / std::max(1.0f, f.right - f.left));
  ImVec2 previous;
  bool have_previous = false;
  *last_y = std::nan("");
  for (std::size_t i = 0; i < n; i = (i + 1 < n && i + stride >= n) ? n - 1 : i + stride) {
    if (!std::isfinite(s.y[i])) continue;
    *last_y = s.y[i];
    const ImVec2 p(f.px(s.x[i]), f.py(s.y[i]));
    if (have_previous) {
      if (s.dashed) {
        draw_dashed_line(draw, previous, p, s.color, line * 0.5f);
      } else {
        draw->AddLine(previous, p, s.color, 2.0f);
      }
      ++drawn;
    }
    if (s.markers) {
      draw->AddCircleFilled(p, line * 0.25f, s.color);
      ++drawn;
    }
    previous = p;
    have_previous = true;
  }
  const ImVec2 legend = entry.at;
  if (s.dashed) {
    draw_dashed_line(draw, ImVec2(legend.x, legend.y + line * 0.6f),
                     ImVec2(legend.x + line * 0.8f, legend.y + line * 0.6f), s.color, line * 0.3f);
  } else {
    draw->AddRectFilled(ImVec2(legend.x, legend.y + line * 0.3f),
                        ImVec2(legend.x + line * 0.8f, legend.y + line * 0.9f), s.color);
  }
  draw_label(draw, ImVec2(legend.x + line, legend.y), rgb(0xE0E0E0), entry.label.c_str());
  return drawn;
}

// Under the mouse: each series' point nearest it in x, with its value.
void draw_tooltip(const std::vector<ChartSeries>& series, const ChartFrame& f,
                  const ChartOptions& o) {
  const double mx =
      f.x0 + (ImGui::GetIO().MousePos.x - f.left) / (f.right - f.left) * (f.x1 - f.x0);
  char text[64];
  ImGui::BeginTooltip();
  for (const ChartSeries& s : series) {
    std::size_t best = 0;
    double best_d = std::numeric_limits<double>::max();
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      const double d = std::abs(f.fx(s.x[i]) - mx);
      if (d < best_d) best_d = d, best = i;
    }
    if (best_d == std::numeric_limits<double>::max()) continue;
    const std::string xs = o.x_format ? o.x_format(s.x[best]) : plain_number(s.x[best]);
    std::snprintf(text, sizeof text, o.y_format, s.y[best]);
    // Its colour opaque: a faint series (each step's values under a smoothed curve) is faint
    // only on the plot, its readout as readable as the others'.
    ImVec4 colour = ImGui::ColorConvertU32ToFloat4(s.color);
    colour.w = 1.0f;
    ImGui::TextColored(colour, "%s: %s at %s %s", s.label.c_str(), text, o.x_label.c_str(),
                       xs.c_str());
  }
  ImGui::EndTooltip();
}

}  // namespace

int draw_chart(const char* id, const std::vector<ChartSeries>& series, const ChartOptions& o,
               float width, float height, std::vector<double>* last_drawn) {
  ImGui::PushID(id);
  ChartFrame f;
  f.log_x = o.log_x;
  const bool has_points = fit_range(series, o, &f);
  f.corner = ImGui::GetCursorScreenPos();
  f.line = ImGui::GetTextLineHeight();
  f.left = f.corner.x + 4.2f * f.line;
  f.right = f.corner.x + width - f.line * 0.5f;
  const std::vector<LegendEntry> legend = place_legend(series, o, &f);
  // The plot keeps three lines under its legend, however many lines that wraps onto, so that the
  // y axis's labels never run into each other: a chart given less is taller (its window scrolls).
  height = std::max(height, f.top - f.corner.y + 3 * f.line + 2.1f * f.line);
  f.bottom = f.corner.y + height - f.line * 2.1f;  // a line of ticks, a line for the x label
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw_axes(draw, f, o);
  int drawn = 0;
  std::vector<double> last(series.size());
  for (std::size_t k = 0; k < series.size(); ++k) {
    drawn += draw_series(draw, f, series[k], legend[k], &last[k]);
  }
  if (last_drawn != nullptr) *last_drawn = std::move(last);
  ImGui::InvisibleButton("chart", ImVec2(width, height));
  if (ImGui::IsItemHovered() && has_points) draw_tooltip(series, f, o);
  ImGui::PopID();
  return drawn;
}

}  // namespace mirrorlab::gui
