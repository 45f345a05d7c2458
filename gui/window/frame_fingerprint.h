// A fingerprint of what a frame would draw (every vertex, index, clip rectangle and texture of
// ImGui's draw data, and the framebuffer size). When it equals the last drawn frame's, the
// window already shows exactly this picture, so the frame need not be rasterized again: under
// software OpenGL (llvmpipe, Xvfb) rasterizing is nearly all of a frame's cost, and training
// gets those cycles back while the picture stands still.
#pragma once

#include <cstdint>

struct ImDrawData;

namespace mirrorlab::gui {

std::uint64_t frame_fingerprint(const ImDrawData& draw_data, int width, int height);

}  // namespace mirrorlab::gui
