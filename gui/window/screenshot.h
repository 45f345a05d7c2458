// Saving what the window shows as a picture (F12 or P in the GUI, --screenshot in scripted runs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mirrorlab::gui {

// Reads the current OpenGL back buffer (call after rendering, before swapping buffers) and
// writes it, top row first, as the picture its name asks for: a JPEG for ".jpg" or ".jpeg", else
// a PNG. Throws std::runtime_error if the file cannot be written.
void write_framebuffer_picture(const std::filesystem::path& path, int width, int height);

// "" when `path` ends as a picture mirrorlab writes (".png", ".jpg" or ".jpeg", case aside), else
// what is wrong and what to do.
std::string picture_name_problem(const std::filesystem::path& path);

// Where F12 saves a screenshot in `folder` ("": the working folder): mirrorlab-001.png, -002, ...,
// the first number after
// `*taken` whose file is not there (a window of an earlier session saved them: they are the
// user's, and kept); `*taken` becomes that number.
std::filesystem::path next_screenshot_path(const std::filesystem::path& folder, int* taken);

// Flips rows of tightly packed RGB pixels in place (OpenGL reads bottom row first).
void flip_rows(std::vector<std::uint8_t>& rgb, int width, int height);

}  // namespace mirrorlab::gui
