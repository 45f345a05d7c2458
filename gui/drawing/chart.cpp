#include "gui/drawing/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

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

int draw_chart(const char* id, const std::vector<ChartSeries>& series, const ChartOptions& o,
               float width, float height) {
  ImGui::PushID(id);
  const auto fx = [&](double x) { return o.log_x ? std::log2(std::max(x, 1e-30)) : x; };
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const ChartSeries& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, fx(s.x[i]));
      x1 = std::max(x1, fx(s.x[i]));
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

  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 corner = ImGui::GetCursorScreenPos();
  const float line = ImGui::GetTextLineHeight();
  const float left = corner.x + 4.2f * line, right = corner.x + width - line * 0.5f;
  // The legend runs after the y label and wraps onto more lines when the chart is narrow.
  std::vector<ImVec2> legend_at;
  float lx = left + ImGui::CalcTextSize(o.y_label.c_str()).x + line, ly = corner.y;
  for (const ChartSeries& s : series) {
    const float w = line * 2 + ImGui::CalcTextSize(s.label.c_str()).x;
    if (lx + w > right && lx > left + line) lx = left, ly += line;
    legend_at.push_back(ImVec2(lx, ly));
    lx += w;
  }
  const float top = ly + line * 1.3f, bottom = corner.y + height - line * 1.5f;
  const auto px = [&](double x) {
    return static_cast<float>(left + (fx(x) - x0) / (x1 - x0) * (right - left));
  };
  const auto py = [&](double y) {
    return static_cast<float>(bottom - (y - y0) / (y1 - y0) * (bottom - top));
  };
  const std::uint32_t axis = rgb(0x909098), grid = rgb(0x3A3A42);
  char text[64];
  // Up to 4 intervals on the y axis, fewer when the chart is too short for their labels.
  const int y_ticks = std::clamp(static_cast<int>((bottom - top) / (1.5f * line)), 1, 4);
  for (int t = 0; t <= y_ticks; ++t) {  // y ticks
    const double y = y0 + (y1 - y0) * t / y_ticks;
    draw->AddLine(ImVec2(left, py(y)), ImVec2(right, py(y)), grid);
    std::snprintf(text, sizeof text, o.y_format, y);
    draw->AddText(ImVec2(corner.x, py(y) - line / 2), axis, text);
  }
  int x_ticks = std::clamp(static_cast<int>((right - left) / (6 * line)), 1, 4);
  // Whole numbers (steps) get no more ticks than there are numbers, so no label repeats.
  if (!o.log_x && o.x_format == nullptr) {
    x_ticks = std::clamp(static_cast<int>(x1 - x0), 1, x_ticks);
  }
  for (int t = 0; t <= x_ticks; ++t) {  // x ticks, as many as fit
    const double v = x0 + (x1 - x0) * t / x_ticks;
    const double x = o.log_x ? std::exp2(v) : v;
    const std::string label = o.x_format ? o.x_format(x) : plain_number(x);
    const float at = static_cast<float>(left + (v - x0) / (x1 - x0) * (right - left));
    const float w = ImGui::CalcTextSize(label.c_str()).x;
    draw->AddText(ImVec2(std::clamp(at - w / 2, left, right - w), bottom + 2), axis, label.c_str());
  }
  draw->AddLine(ImVec2(left, bottom), ImVec2(right, bottom), axis);
  draw->AddLine(ImVec2(left, top), ImVec2(left, bottom), axis);
  draw->AddText(ImVec2(left, corner.y), axis, o.y_label.c_str());
  const float xl = ImGui::CalcTextSize(o.x_label.c_str()).x;
  draw->AddText(ImVec2(right - xl, corner.y + height - line), axis, o.x_label.c_str());

  int drawn = 0;
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    const std::size_t n = std::min(s.x.size(), s.y.size());
    // About one point per pixel: a 10,000-step run draws as fast as a 500-step one.
    const std::size_t stride = std::max<std::size_t>(1, n / std::max(1.0f, right - left));
    ImVec2 previous;
    bool have_previous = false;
    for (std::size_t i = 0; i < n; i += stride) {
      if (!std::isfinite(s.y[i])) continue;
      const ImVec2 p(px(s.x[i]), py(s.y[i]));
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
    const ImVec2 at = legend_at[k];
    if (s.dashed) {
      draw_dashed_line(draw, ImVec2(at.x, at.y + line * 0.6f),
                       ImVec2(at.x + line * 0.8f, at.y + line * 0.6f), s.color, line * 0.3f);
    } else {
      draw->AddRectFilled(ImVec2(at.x, at.y + line * 0.3f),
                          ImVec2(at.x + line * 0.8f, at.y + line * 0.9f), s.color);
    }
    draw->AddText(ImVec2(at.x + line, at.y), rgb(0xE0E0E0), s.label.c_str());
  }
  ImGui::InvisibleButton("chart", ImVec2(width, height));
  if (ImGui::IsItemHovered() && !empty) {
    const double mx = x0 + (ImGui::GetIO().MousePos.x - left) / (right - left) * (x1 - x0);
    ImGui::BeginTooltip();
    for (const ChartSeries& s : series) {
      // The point nearest the mouse in x.
      std::size_t best = 0;
      double best_d = std::numeric_limits<double>::max();
      for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        const double d = std::abs(fx(s.x[i]) - mx);
        if (d < best_d) best_d = d, best = i;
      }
      if (best_d == std::numeric_limits<double>::max()) continue;
      const std::string xs = o.x_format ? o.x_format(s.x[best]) : plain_number(s.x[best]);
      std::snprintf(text, sizeof text, o.y_format, s.y[best]);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(s.color), "%s: %s at %s %s",
                         s.label.c_str(), text, o.x_label.c_str(), xs.c_str());
    }
    ImGui::EndTooltip();
  }
  ImGui::PopID();
  return drawn;
}

}  // namespace mirrorlab::gui
