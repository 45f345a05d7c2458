// An OpenGL texture owned by a panel: thumbnails of the batch's images and the gradient
// heatmaps are uploaded once when the step changes and then drawn every frame as one quad each,
// which costs a software renderer (llvmpipe under Xvfb) far less than a rectangle per pixel.
#pragma once

#include <cstdint>
#include <vector>

#include "imgui.h"

namespace mirrorlab::gui {

class Texture {
 public:
  Texture() = default;
  ~Texture();
  Texture(const Texture&) = delete;
  Texture& operator=(const Texture&) = delete;
  Texture(Texture&& other) noexcept;
  Texture& operator=(Texture&& other) noexcept;

  // Replaces the contents with `width` x `height` pixels, row-major, each an ImU32 colour
  // (0xAABBGGRR, i.e. the bytes R, G, B, A). Needs the window's OpenGL context (Draw() has it).
  void upload(int width, int height, const std::vector<std::uint32_t>& pixels);

  bool empty() const { return id_ == 0; }
  int width() const { return width_; }
  int height() const { return height_; }
  ImTextureID id() const;

 private:
  void release();
  unsigned id_ = 0;  // GLuint
  int width_ = 0, height_ = 0;
};

}  // namespace mirrorlab::gui
