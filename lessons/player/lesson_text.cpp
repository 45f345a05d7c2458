#include "lessons/player/lesson_text.h"

namespace mirrorlab::lessons {

namespace {
std::string located(const std::string& file, int line, const std::string& what) {
  std::string out = file;
  if (line > 0) out.append(":").append(std::to_string(line));
  return out.append(": ").append(what);
}
}  // namespace

LessonError::LessonError(const std::string& file, int line, const std::string& what)
    : std::runtime_error(located(file, line, what)),
      file_(file),
      line_(line) {}

std::string Paragraph::plain() const {
  std::string out;
  for (const TextRun& r : runs) out += r.text;
  return out;
}

}  // namespace mirrorlab::lessons
