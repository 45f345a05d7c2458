// What the lesson readers below the lesson itself share: a lesson's prose as styled paragraphs,
// and the error that names a lesson file's line.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "files/file_error.h"

namespace mirrorlab::lessons {

// "lessons/01-mirrored-strategy.md:42: [[check]] needs `that`, the name of a live value".
class LessonError : public files::FileError {
 public:
  using FileError::FileError;
};

// Prose, kept as paragraphs of styled runs so the terminal and the GUI can each draw it.
enum class RunStyle { kPlain, kStrong, kEmphasis, kCode };
struct TextRun {
  std::string text;
  RunStyle style = RunStyle::kPlain;
};
enum class ParagraphKind { kParagraph, kBullet, kNumbered, kQuote, kCodeBlock };
struct Paragraph {
  ParagraphKind kind = ParagraphKind::kParagraph;
  std::vector<TextRun> runs;
  std::string plain() const;  // the runs' text, joined
};

}  // namespace mirrorlab::lessons
