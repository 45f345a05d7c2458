#include "gui/drawing/content_height.h"

#include "imgui.h"
#include "imgui_internal.h"

namespace mirrorlab::gui {
namespace {

// Kept in the window's own storage with the frame it was said in: a frame's wishes only.
constexpr const char* kWantedKey = "##wants more height";
constexpr const char* kFrameKey = "##wants more height, frame";
constexpr const char* kFillsKey = "##fills its room, frame";
constexpr const char* kMostKey = "##fills its room up to";
constexpr const char* kMostFrameKey = "##fills its room up to, frame";

// The window's own keys, whatever IDs its items have pushed (a tab, a table) when it is said.
ImGuiID key(const ImGuiWindow* window, const char* name) { return ImHashStr(name, 0, window->ID); }

float wanted_this_frame(ImGuiWindow* window) {
  const ImGuiStorage& storage = window->StateStorage;
  if (storage.GetInt(key(window, kFrameKey), -1) != ImGui::GetFrameCount()) return 0;
  return storage.GetFloat(key(window, kWantedKey), 0);
}

}  // namespace

float content_height() {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  // The items' lowest edge, in the window's own coordinates (scrolling moves the items, not it).
  return window->DC.CursorMaxPos.y - window->Pos.y + window->Scroll.y + window->WindowPadding.y +
         wanted_this_frame(window);
}

float scroll_max_now() {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  // The items' lowest edge unscrolled, and the padding below it, against the visible bottom.
  const float bottom = window->DC.CursorMaxPos.y + window->Scroll.y + window->WindowPadding.y;
  return ImMax(0.0f, bottom - window->InnerRect.Max.y);
}

void wants_more_height(float px) {
  if (!(px > 0)) return;
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  const float wanted = wanted_this_frame(window) + px;
  window->StateStorage.SetInt(key(window, kFrameKey), ImGui::GetFrameCount());
  window->StateStorage.SetFloat(key(window, kWantedKey), wanted);
}

void fills_room() {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  window->StateStorage.SetInt(key(window, kFillsKey), ImGui::GetFrameCount());
}

void fills_room_up_to(float most) {
  fills_room();
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  window->StateStorage.SetInt(key(window, kMostFrameKey), ImGui::GetFrameCount());
  window->StateStorage.SetFloat(key(window, kMostKey), most);
}

float most_room_filled() {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  const ImGuiStorage& storage = window->StateStorage;
  if (storage.GetInt(key(window, kMostFrameKey), -1) != ImGui::GetFrameCount()) return 0;
  return storage.GetFloat(key(window, kMostKey), 0);
}

bool filling_room() {
  ImGuiWindow* window = ImGui::GetCurrentWindow();
  return window->StateStorage.GetInt(key(window, kFillsKey), -1) == ImGui::GetFrameCount();
}

}  // namespace mirrorlab::gui
