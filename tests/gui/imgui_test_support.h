// What the tests that draw with ImGui in-process share (no window system, no OpenGL): a context
// ready for frames, and a window's actions that do nothing.
#pragma once

#include <string>

#include "gui/panels/panel.h"
#include "imgui.h"

namespace mirrorlab::gui::testing {

// A new current ImGui context of `display` pixels: no ini file, frames of 1/60 s, its font atlas
// built (with `font_file` at `font_pixels` when given, else ImGui's own font). The caller
// destroys it (ImGui::DestroyContext).
inline ImGuiContext* make_windowless_context(ImVec2 display, const char* font_file = nullptr,
                                             float font_pixels = 0) {
  ImGuiContext* context = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = display;
  io.DeltaTime = 1.0f / 60;
  if (font_file != nullptr) io.Fonts->AddFontFromFileTTF(font_file, font_pixels);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  return context;
}

// The window's actions for a panel drawn alone: none is taken.
class NoActions final : public AppActions {
 public:
  void reconfigure(const core::SessionConfig&) override {}
  void save_screenshot() override {}
  void load_checkpoint(const std::string&) override {}
  const std::string& load_error() const override { return none_; }

 private:
  std::string none_;
};

}  // namespace mirrorlab::gui::testing
