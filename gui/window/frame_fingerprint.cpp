#include "gui/window/frame_fingerprint.h"

#include <functional>
#include <string_view>

#include "imgui.h"

namespace mirrorlab::gui {
namespace {

std::uint64_t bytes_hash(const void* data, std::size_t size) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), size));
}

void mix(std::uint64_t& seed, std::uint64_t value) {
  seed ^= value + 0x9E3779B97F4A7C15ull + (seed << 6) + (seed >> 2);
}

}  // namespace

std::uint64_t frame_fingerprint(const ImDrawData& draw_data, int width, int height) {
  std::uint64_t seed =
      (static_cast<std::uint64_t>(width) << 32) | static_cast<std::uint32_t>(height);
  for (int i = 0; i < draw_data.CmdListsCount; ++i) {
    const ImDrawList& list = *draw_data.CmdLists[i];
    mix(seed, bytes_hash(list.VtxBuffer.Data, list.VtxBuffer.size_in_bytes()));
    mix(seed, bytes_hash(list.IdxBuffer.Data, list.IdxBuffer.size_in_bytes()));
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      // Field by field: the struct has padding and a callback pointer.
      mix(seed, bytes_hash(&cmd.ClipRect, sizeof cmd.ClipRect));
      mix(seed, reinterpret_cast<std::uintptr_t>(cmd.TextureId));
      mix(seed, (static_cast<std::uint64_t>(cmd.VtxOffset) << 32) | cmd.IdxOffset);
      mix(seed, cmd.ElemCount);
      mix(seed, reinterpret_cast<std::uintptr_t>(cmd.UserCallback));
    }
  }
  return seed;
}

}  // namespace mirrorlab::gui
