// Colours that survive a projector and colour-blind eyes.
//
// Replicas use the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), the usual
// choice for categories that must stay apart for deuteranopes and protanopes; phases use Paul
// Tol's "bright" scheme, which is also colour-blind safe and does not share a hue with the
// first replicas. Every coloured thing also carries a text label, so colour is never the only
// clue.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/strategy/events/run_events.h"

struct ImDrawList;
struct ImVec2;

namespace mirrorlab::gui {

// 0xAARRGGBB is not ImGui's order: ImU32 is 0xAABBGGRR. rgb() converts from the usual #RRGGBB.
constexpr std::uint32_t rgb(std::uint32_t rrggbb, std::uint32_t alpha = 255) {
  return (alpha << 24) | ((rrggbb & 0xFF) << 16) | (rrggbb & 0xFF00) | ((rrggbb >> 16) & 0xFF);
}

inline constexpr int kNumReplicaColors = 7;
// #RRGGBB of replica i's colour (cycles after 7 replicas).
std::uint32_t replica_rgb(int replica);
std::uint32_t replica_color(int replica, std::uint32_t alpha = 255);  // ImU32

// Each all-reduce algorithm its own colour ("reduce-to-one", "ring", "one-shot", "nccl"), the
// same in every bar and line of the Compare panel; grey for a name it does not know.
std::uint32_t algorithm_rgb(std::string_view name);
std::uint32_t algorithm_color(std::string_view name);  // ImU32

std::uint32_t phase_rgb(core::Phase phase);
std::uint32_t phase_color(core::Phase phase, std::uint32_t alpha = 255);  // ImU32

// A signed value t in [-1, 1] as a colour of a diverging map that stays apart for colour-blind
// eyes (ColorBrewer PuOr's ends): negative purple-blue, positive orange, zero the panels' dark
// grey; the magnitude goes through a square root so small gradients still show.
std::uint32_t diverging_color(float t);  // ImU32

// A square of colour `color` (ImU32), one text line high, at the cursor, `drop` pixels down;
// what is drawn next goes on the same line beside it (a name, a legend entry).
void swatch(std::uint32_t color, float drop = 0);

// Text that reads on top of a fill of colour `rrggbb` (black on light fills, white on dark).
std::uint32_t text_color_on(std::uint32_t rrggbb);

// A label in a filled box of colour `rrggbb` at the cursor ("PREDICTED"); what is drawn next goes
// on the same line beside it.
void tag(const char* text, std::uint32_t rrggbb);
// Text drawn on a picture at `at` (screen pixels): ImDrawList::AddText, and into ImGui's log
// when one is kept, so that a report has a picture's labels among the panel's words.
void draw_label(ImDrawList* draw, const ImVec2& at, std::uint32_t color, const char* text,
                const char* text_end = nullptr);

// A sentence saying what could not be shown and what to do, wrapped, in a colour that reads on
// the dark background (sky blue).
void say_problem(const std::string& text);
// The frame of the panel a lesson's step looks at, and its swatch in the Lesson panel: white, the
// one colour no replica, phase or algorithm has.
inline constexpr std::uint32_t kLookHereRgb = 0xFFFFFF;
// The colour of what the timing model predicted rather than measured (Okabe-Ito reddish purple).
inline constexpr std::uint32_t kPredictedRgb = 0xCC79A7;

}  // namespace mirrorlab::gui
