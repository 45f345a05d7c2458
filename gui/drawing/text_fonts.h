// The window's fonts beside ImGui's default (the regular one): bold and monospaced faces for
// styled prose (a lesson's **bold** and `code`). Null where the face was not found; then text
// falls back to the regular font and says the style by colour alone.
#pragma once

struct ImFont;

namespace mirrorlab::gui {

struct TextFonts {
  ImFont* bold = nullptr;
  ImFont* mono = nullptr;
};

}  // namespace mirrorlab::gui
