// Fuzz target: the lesson reader (lessons/player/lesson.h), as `mirrorlab lesson run FILE` and
// the GUI's Lesson panel read a lesson file: Markdown through md4c, each step's ```toml block
// through toml++. Any input must read or be refused with a LessonError; anything else (another
// exception, a crash, a sanitizer's report) is a finding.
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz_input.h"
#include "lessons/player/lesson.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mirrorlab::lessons;
  try {
    const Lesson lesson = parse_lesson(mirrorlab::fuzz::as_text(data, size), "fuzz.md");
    // What the reader promises of a lesson it returns.
    if (lesson.steps.empty() || (!lesson.coming && !lesson.steps[0].setup)) std::abort();
  } catch (const LessonError&) {
  }
  return 0;
}
