#include "gui/window/platform_window.h"

#include <GLFW/glfw3.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "gui/window/display.h"
#include "imgui_impl_glfw.h"
#include "imgui_impl_opengl3.h"

namespace mirrorlab::gui {
namespace {

std::string g_glfw_error;  // GLFW reports errors through a C callback, before a window exists

void remember_glfw_error(int code, const char* description) {
  g_glfw_error = std::string(description) + " (GLFW error " + std::to_string(code) + ")";
}

// glfwInit, tried again for a moment where a display is named but did not answer: an X server
// that has just dropped a connection refuses the next one now and then (Xvfb 21.1.7, measured:
// 62 of 500 connections opened right after another closed were refused, none of 500 opened 2 ms
// apart), and a window watched from Python opens right after the last one closed.
bool init_glfw() {
  glfwSetErrorCallback(remember_glfw_error);
  const char* display = std::getenv("DISPLAY");
  for (int attempt = 0;; ++attempt) {
    if (glfwInit()) return true;
    const bool refused = display != nullptr && *display != '\0' &&
                         g_glfw_error.find("Failed to open display") != std::string::npos;
    if (!refused || attempt == 4) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));  // 10 ms to 160 ms
  }
}

// fonts-dejavu-core
const char* kFontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const char* kBoldFontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
const char* kMonoFontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";

// ImGui's context, its dark style, and windows that draw no background of their own. Returns
// the colour the screen is cleared to instead.
ImVec4 start_imgui() {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is fixed; nothing to remember between runs
  ImGui::StyleColorsDark();
  // Software OpenGL (llvmpipe, Xvfb) spends nearly all of a frame filling pixels, and each
  // window's background is a blended, textured quad the size of the window. Clearing the
  // screen to the same colour costs almost nothing, so the windows draw no background of their
  // own: a frame costs about half as much, which is what training gets back.
  ImVec4& window_bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  const ImVec4 clear(window_bg.x, window_bg.y, window_bg.z, 1.0f);
  window_bg.w = 0.0f;
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 4;
  style.FrameRounding = 3;
  return clear;
}

// The fonts at `font_scale`; true when a TTF was baked at the size it is drawn.
bool load_fonts(float font_scale, bool prose_fonts, TextFonts* fonts) {
  ImGuiIO& io = ImGui::GetIO();
  // A real TTF scaled at load time reads better on a projector than a magnified bitmap font.
  const float pixels = 16.0f * font_scale;
  if (!std::filesystem::exists(kFontFile)) {
    io.Fonts->AddFontDefault();
    io.FontGlobalScale = font_scale;
    return false;
  }
  io.Fonts->AddFontFromFileTTF(kFontFile, pixels);
  // Only what the lesson prose needs; each face adds to the atlas the rasterizer samples.
  if (prose_fonts && std::filesystem::exists(kBoldFontFile)) {
    fonts->bold = io.Fonts->AddFontFromFileTTF(kBoldFontFile, pixels);
  }
  if (prose_fonts && std::filesystem::exists(kMonoFontFile)) {
    fonts->mono = io.Fonts->AddFontFromFileTTF(kMonoFontFile, pixels);
  }
  return true;
}

}  // namespace

PlatformWindow::PlatformWindow(int width, int height, bool fit_screen, float font_scale,
                               bool prose_fonts, TextFonts* fonts) {
  // Mesa's software OpenGL allocates and frees buffers of a few hundred KiB every frame; by
  // default glibc maps and unmaps each one, and the page faults that follow cost as much as the
  // drawing (measured: system time 2.1 s down to 0.3 s over 200 frames). Keep such blocks in
  // the heap instead.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  if (!init_glfw()) {
    throw NoDisplayError(no_display_message(g_glfw_error), g_glfw_error);
  }
  if (GLFWmonitor* monitor = fit_screen ? glfwGetPrimaryMonitor() : nullptr) {
    int x = 0, y = 0, w = 0, h = 0;
    glfwGetMonitorWorkarea(monitor, &x, &y, &w, &h);
    if (w > 0 && h > 0) width = std::min(width, w), height = std::min(height, h);
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  window_ = glfwCreateWindow(width, height, "mirrorlab: mirrored training on virtual GPUs", nullptr,
                             nullptr);
  if (window_ == nullptr) {
    glfwTerminate();
    throw NoDisplayError("cannot create an OpenGL 3.3 window: " + g_glfw_error +
                             ". Under Xvfb, install libgl1-mesa-dri (software OpenGL).",
                         "no OpenGL 3.3 window: " + g_glfw_error +
                             " (under Xvfb, install libgl1-mesa-dri: software OpenGL)");
  }
  glfwMakeContextCurrent(window_);
  glfwSetWindowUserPointer(window_, this);
  glfwSetWindowRefreshCallback(window_, [](GLFWwindow* w) {
    static_cast<PlatformWindow*>(glfwGetWindowUserPointer(w))->exposed_ = true;
  });
  glfwSwapInterval(0);  // the frame cap paces frames; vsync is absent under Xvfb anyway

  clear_color_ = start_imgui();
  const bool glyphs_at_size = load_fonts(font_scale, prose_fonts, fonts);
  ImGui::GetStyle().ScaleAllSizes(font_scale);
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  if (glyphs_at_size) sample_text_nearest();
}

PlatformWindow::~PlatformWindow() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

void PlatformWindow::sample_text_nearest() {
  // Glyphs are baked at the size they are drawn, so text sampled nearest looks as it does
  // sampled linearly (compared side by side at font scales 1 to 2), and llvmpipe samples
  // nearest with less work: a frame of all panels costs about 12% less (docs/gui-performance.md).
  // Lines then no longer take their anti-aliasing from the atlas but draw it as geometry, so
  // they look as before. The backend makes the atlas on its first frame unless its objects
  // exist already, so they are made here.
  ImGui::GetStyle().AntiAliasedLinesUseTex = false;
  ImGui_ImplOpenGL3_CreateDeviceObjects();
  const auto atlas =
      static_cast<GLuint>(reinterpret_cast<std::uintptr_t>(ImGui::GetIO().Fonts->TexID));
  GLint bound = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
  glBindTexture(GL_TEXTURE_2D, atlas);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(bound));
}

bool PlatformWindow::should_close() const { return glfwWindowShouldClose(window_) != 0; }
void PlatformWindow::close() { glfwSetWindowShouldClose(window_, GLFW_TRUE); }
void PlatformWindow::poll_events() { glfwPollEvents(); }
void PlatformWindow::wait_events(double timeout_seconds) { glfwWaitEventsTimeout(timeout_seconds); }

bool PlatformWindow::take_exposed() {
  const bool exposed = exposed_;
  exposed_ = false;
  return exposed;
}

void PlatformWindow::new_frame() {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
}

void PlatformWindow::framebuffer_size(int* width, int* height) const {
  glfwGetFramebufferSize(window_, width, height);
}

void PlatformWindow::window_size(int* width, int* height) const {
  glfwGetWindowSize(window_, width, height);
}

void PlatformWindow::draw(ImDrawData* data) {
  int width = 0, height = 0;
  framebuffer_size(&width, &height);
  glViewport(0, 0, width, height);
  glClearColor(clear_color_.x, clear_color_.y, clear_color_.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(data);
}

void PlatformWindow::show() { glfwSwapBuffers(window_); }

std::string no_display_message(const std::string& why) {
  return "cannot open a window: " + why +
         ". The GUI needs a display: run it on a desktop, or headless under a virtual X server "
         "with 'xvfb-run -a mirrorlab gui ...'; 'mirrorlab train' trains without one.";
}

bool can_open_window(std::string* why) {
  if (!init_glfw()) {
    if (why != nullptr) *why = g_glfw_error;
    return false;
  }
  glfwTerminate();
  return true;
}

}  // namespace mirrorlab::gui
