#include "gui/screenshot.h"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <algorithm>
#include <stdexcept>

namespace mirrorlab::gui {

void flip_rows(std::vector<std::uint8_t>& rgb, int width, int height) {
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  for (int y = 0; y < height / 2; ++y) {
    std::swap_ranges(rgb.begin() + static_cast<std::ptrdiff_t>(y * row),
                     rgb.begin() + static_cast<std::ptrdiff_t>((y + 1) * row),
                     rgb.begin() + static_cast<std::ptrdiff_t>((height - 1 - y) * row));
  }
}

void write_framebuffer_png(const std::filesystem::path& path, int width, int height) {
  if (width <= 0 || height <= 0) throw std::runtime_error("the window has no pixels to save");
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * height * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);  // rows of width*3 bytes, no padding
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
  flip_rows(rgb, width, height);
  if (stbi_write_png(path.c_str(), width, height, 3, rgb.data(), width * 3) == 0) {
    throw std::runtime_error(path.string() + ": cannot write the PNG (is the folder there?)");
  }
}

}  // namespace mirrorlab::gui
