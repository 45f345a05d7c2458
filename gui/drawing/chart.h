// A small line chart drawn with ImGui's draw list (1.86 has no plotting widget beyond
// PlotLines): axes with a few ticks, one line per series, a legend, a hover readout. Series
// with more points than pixels are thinned to about one point per pixel, so long runs stay fast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mirrorlab::gui {

struct ChartSeries {
  std::string label;
  std::uint32_t color = 0xFFFFFFFF;  // ImU32
  std::vector<double> x, y;
  bool markers = false;  // draw a dot at every point (few points: epochs, sizes)
  bool dashed = false;   // a dashed line: a model's prediction beside measured points
};

struct ChartOptions {
  std::string x_label, y_label;
  bool log_x = false;  // sizes in a sweep
  bool y_from_zero = false;
  const char* y_format = "%.3g";
  // Formats an x value for ticks and the hover readout (nullptr: "%.0f").
  std::string (*x_format)(double) = nullptr;
};

// Draws into the current window at the cursor, `width` x `height` pixels; returns the number
// of line segments and markers drawn. A series longer than the plot is wide draws about a point
// per pixel, always its last one. `last_drawn`, if given: each series' value at the last point
// it drew (NaN where it drew none), what the chart ends at.
int draw_chart(const char* id, const std::vector<ChartSeries>& series, const ChartOptions& options,
               float width, float height, std::vector<double>* last_drawn = nullptr);

std::string format_bytes(double bytes);      // "4 KiB", "16 MiB"
std::string format_seconds(double seconds);  // "850 ns", "12.3 µs", "4.56 ms", "1.20 s"

}  // namespace mirrorlab::gui
