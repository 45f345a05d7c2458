#include "gui/drawing/colors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gui/drawing/wrapped_text.h"
#include "imgui.h"
#include "virtualgpu/collectives/all_reduce_algorithms.h"

namespace mirrorlab::gui {
namespace {

// Okabe-Ito without its black (the background is dark): orange, sky blue, bluish green, yellow,
// blue, vermillion, reddish purple.
constexpr std::uint32_t kOkabeIto[kNumReplicaColors] = {0xE69F00, 0x56B4E9, 0x009E73, 0xF0E442,
                                                        0x0072B2, 0xD55E00, 0xCC79A7};

}  // namespace

std::uint32_t replica_rgb(int replica) {
  const int i = replica < 0 ? 0 : replica % kNumReplicaColors;
  return kOkabeIto[i];
}

std::uint32_t replica_color(int replica, std::uint32_t alpha) {
  return rgb(replica_rgb(replica), alpha);
}

std::uint32_t algorithm_rgb(std::string_view name) {
  if (name == vgpu::kReduceToOneName) return 0xD55E00;  // vermillion
  if (name == vgpu::kRingName) return 0x009E73;         // bluish green
  if (name == vgpu::kOneShotName) return 0x0072B2;      // blue
  if (name == vgpu::kNcclName) return 0xCC79A7;         // reddish purple
  return 0x999999;
}

std::uint32_t algorithm_color(std::string_view name) { return rgb(algorithm_rgb(name)); }

std::uint32_t phase_rgb(core::Phase phase) {
  switch (phase) {  // Tol bright: blue, cyan, green, yellow, red, purple, grey
    case core::Phase::kBroadcastInit:
      return 0xBBBBBB;
    case core::Phase::kSplit:
      return 0x66CCEE;
    case core::Phase::kForward:
      return 0x4477AA;
    case core::Phase::kBackward:
      return 0xAA3377;
    case core::Phase::kAllReduce:
      return 0xEE6677;
    case core::Phase::kUpdate:
      return 0x228833;
    case core::Phase::kEvaluate:
      return 0xCCBB44;
    case core::Phase::kWait:  // idle: dark, so the busy phases stand out
      return 0x4A4A55;
  }
  return 0xBBBBBB;
}

std::uint32_t phase_color(core::Phase phase, std::uint32_t alpha) {
  return rgb(phase_rgb(phase), alpha);
}

std::uint32_t diverging_color(float t) {
  const float m = std::sqrt(std::min(1.0f, std::fabs(t)));
  const std::uint32_t end = t < 0 ? 0x8073AC : 0xE08214;  // PuOr purple, PuOr orange
  constexpr std::uint32_t kZero = 0x2A2A30;
  const auto channel = [&](int shift) {
    const float a = static_cast<float>((kZero >> shift) & 0xFF);
    const float b = static_cast<float>((end >> shift) & 0xFF);
    return static_cast<std::uint32_t>(a + (b - a) * m + 0.5f) << shift;
  };
  return rgb(channel(16) | channel(8) | channel(0));
}

std::uint32_t text_color_on(std::uint32_t rrggbb) {
  const double r = (rrggbb >> 16) & 0xFF, g = (rrggbb >> 8) & 0xFF, b = rrggbb & 0xFF;
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? rgb(0x000000) : rgb(0xFFFFFF);
}

void swatch(std::uint32_t color, float drop) {
  const float side = ImGui::GetTextLineHeight();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + drop),
                                            ImVec2(p.x + side, p.y + drop + side), color);
  ImGui::Dummy(ImVec2(side, side + drop));
  ImGui::SameLine();
}

void tag(const char* text, std::uint32_t rrggbb) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 size = ImGui::CalcTextSize(text);
  const float pad = ImGui::GetTextLineHeight() * 0.25f;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + size.x + 2 * pad, p.y + size.y), rgb(rrggbb), pad);
  draw_label(draw, ImVec2(p.x + pad, p.y), text_color_on(rrggbb), text);
  ImGui::Dummy(ImVec2(size.x + 2 * pad, size.y));
  ImGui::SameLine();
}

void say_problem(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, rgb(0x56B4E9));
  text_wrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

}  // namespace mirrorlab::gui

namespace mirrorlab::gui {

void draw_label(ImDrawList* draw, const ImVec2& at, std::uint32_t color, const char* text,
                const char* text_end) {
  draw->AddText(at, color, text, text_end);
  const int length = static_cast<int>(text_end != nullptr ? text_end - text : std::strlen(text));
  ImGui::LogText("\n%.*s\n", length, text);  // does nothing unless a log is kept
}

}  // namespace mirrorlab::gui
