// Saving what the window shows as a PNG (F12 or P in the GUI, --screenshot in scripted runs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace mirrorlab::gui {

// Reads the current OpenGL back buffer (call after rendering, before swapping buffers) and
// writes it as an RGB PNG, top row first. Throws std::runtime_error if the file cannot be
// written.
void write_framebuffer_png(const std::filesystem::path& path, int width, int height);

// Where F12 saves a screenshot in `folder` ("": the working folder): mirrorlab-001.png, -002, ...,
// the first number after
// `*taken` whose file is not there (a window of an earlier session saved them: they are the
// user's, and kept); `*taken` becomes that number.
std::filesystem::path next_screenshot_path(const std::filesystem::path& folder, int* taken);

// Flips rows of tightly packed RGB pixels in place (OpenGL reads bottom row first).
void flip_rows(std::vector<std::uint8_t>& rgb, int width, int height);

}  // namespace mirrorlab::gui
