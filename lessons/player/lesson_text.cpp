#include "lessons/player/lesson_text.h"

namespace mirrorlab::lessons {

std::string Paragraph::plain() const {
  std::string out;
  for (const TextRun& r : runs) out += r.text;
  return out;
}

}  // namespace mirrorlab::lessons
