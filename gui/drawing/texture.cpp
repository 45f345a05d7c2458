#include "gui/drawing/texture.h"

#include <GL/gl.h>

#include <stdexcept>
#include <utility>

namespace mirrorlab::gui {

Texture::~Texture() { release(); }

Texture::Texture(Texture&& other) noexcept
    : id_(std::exchange(other.id_, 0u)), width_(other.width_), height_(other.height_) {}

Texture& Texture::operator=(Texture&& other) noexcept {
  if (this != &other) {
    release();
    id_ = std::exchange(other.id_, 0u);
    width_ = other.width_;
    height_ = other.height_;
  }
  return *this;
}

void Texture::release() {
  if (id_ != 0) {
    const GLuint id = id_;
    glDeleteTextures(1, &id);
    id_ = 0;
  }
}

ImTextureID Texture::id() const {
  return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(id_));
}

void Texture::upload(int width, int height, const std::vector<std::uint32_t>& pixels) {
  if (width <= 0 || height <= 0 ||
      pixels.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height)) {
    throw std::invalid_argument("Texture::upload: pixels do not match width x height");
  }
  GLint previous = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previous);
  if (id_ == 0) {
    GLuint id = 0;
    glGenTextures(1, &id);
    id_ = id;
    width_ = height_ = 0;
  }
  glBindTexture(GL_TEXTURE_2D, id_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);  // rows of 4-byte pixels
  if (width != width_ || height != height_) {
    // Nearest: a thumbnail or a heatmap cell stays a crisp block of pixels when magnified.
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                 pixels.data());
    width_ = width;
    height_ = height;
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE,
                    pixels.data());
  }
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(previous));
}

}  // namespace mirrorlab::gui
