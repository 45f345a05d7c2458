#include "gui/window/screenshot.h"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/io/output_file.h"

namespace mirrorlab::gui {

void flip_rows(std::vector<std::uint8_t>& rgb, int width, int height) {
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  for (int y = 0; y < height / 2; ++y) {
    std::swap_ranges(rgb.begin() + static_cast<std::ptrdiff_t>(y * row),
                     rgb.begin() + static_cast<std::ptrdiff_t>((y + 1) * row),
                     rgb.begin() + static_cast<std::ptrdiff_t>((height - 1 - y) * row));
  }
}

std::filesystem::path next_screenshot_path(const std::filesystem::path& folder, int* taken) {
  for (;;) {
    char name[32];
    std::snprintf(name, sizeof name, "mirrorlab-%03d.png", ++*taken);
    const std::filesystem::path path = folder / name;
    std::error_code error;  // one that cannot be looked at: the write says why
    const std::filesystem::file_status status = std::filesystem::symlink_status(path, error);
    if (error || !std::filesystem::exists(status)) return path;
  }
}

namespace {

std::string lower_ending(const std::filesystem::path& path) {
  std::string ending = path.extension().string();
  for (char& c : ending) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ending;
}

bool names_jpeg(const std::filesystem::path& path) {
  const std::string ending = lower_ending(path);
  return ending == ".jpg" || ending == ".jpeg";
}

}  // namespace

std::string picture_name_problem(const std::filesystem::path& path) {
  if (lower_ending(path) == ".png" || names_jpeg(path)) return "";
  return path.string() + ": mirrorlab saves pictures as PNG or JPEG: end the name in .png or .jpg";
}

void write_framebuffer_picture(const std::filesystem::path& path, int width, int height) {
  if (width <= 0 || height <= 0) throw std::runtime_error("the window has no pixels to save");
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * height * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);  // rows of width*3 bytes, no padding
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
  flip_rows(rgb, width, height);
  // Encoded in memory, then written whole (core::OutputFile): a full disk leaves no half picture.
  std::string bytes;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                               static_cast<std::size_t>(size));
  };
  const bool jpeg = names_jpeg(path);
  constexpr int kJpegQuality = 92;  // text on panels stays sharp
  if ((jpeg ? stbi_write_jpg_to_func(append, &bytes, width, height, 3, rgb.data(), kJpegQuality)
            : stbi_write_png_to_func(append, &bytes, width, height, 3, rgb.data(), width * 3)) ==
      0) {
    throw std::runtime_error(path.string() + ": the " + (jpeg ? "JPEG" : "PNG") +
                             " could not be encoded");
  }
  core::write_file_whole(path, bytes);
}

}  // namespace mirrorlab::gui
