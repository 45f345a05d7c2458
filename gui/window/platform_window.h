// The window on the platform: GLFW's window with an OpenGL 3.3 context, ImGui on it with its
// style and fonts, and the drawing of a frame's ImGui draw data to the screen. What the window
// shows and when it draws are app_window.cpp's; this file knows no panel.
#pragma once

#include "gui/drawing/text_fonts.h"
#include "imgui.h"

struct GLFWwindow;

namespace mirrorlab::gui {

class PlatformWindow {
 public:
  // Opens a window of `width` x `height` pixels with ImGui on it, its text at `font_scale`
  // (DejaVu Sans when installed, baked at its size; ImGui's own font scaled otherwise); with
  // `prose_fonts`, the bold and monospaced faces too (*fonts). With `fit_screen`, no larger than
  // the primary monitor's work area. Throws NoDisplayError (gui/window/display.h) when there is
  // no display or no OpenGL 3.3.
  PlatformWindow(int width, int height, bool fit_screen, float font_scale, bool prose_fonts,
                 TextFonts* fonts);
  ~PlatformWindow();
  PlatformWindow(const PlatformWindow&) = delete;
  PlatformWindow& operator=(const PlatformWindow&) = delete;

  bool should_close() const;
  void close();  // as if the user closed it
  void poll_events();
  void wait_events(double timeout_seconds);  // until input, or the timeout
  // Whether the window was exposed or resized since the last call: its next frame must be
  // drawn whatever it shows.
  bool take_exposed();

  void new_frame();  // the platform's and the renderer's part of ImGui::NewFrame
  void framebuffer_size(int* width, int* height) const;
  void window_size(int* width, int* height) const;  // in screen pixels, as opened
  // Clears the screen to the panels' background and draws `data` (not yet shown).
  void draw(ImDrawData* data);
  void show();  // swaps the buffers: waits for the software rasterizer to finish the frame

 private:
  void sample_text_nearest();

  GLFWwindow* window_ = nullptr;
  ImVec4 clear_color_;  // the panels' background colour: see the constructor
  bool exposed_ = true;
};

}  // namespace mirrorlab::gui
