// A lesson's words in a terminal (`mirrorlab lesson run`): wrapped to the width, with a word and
// the runs glued to it kept together, and the questions', answers' and checks' lines wrapped too.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "app/output/lesson_text.h"
#include "core/session/text/console_text.h"

namespace {

using mirrorlab::app::wrap_paragraphs;
using mirrorlab::core::wrap_line;
using mirrorlab::lessons::Paragraph;
using mirrorlab::lessons::RunStyle;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Lesson 11's introduction ran a line to 95 columns at a width of 80: "(" then `--bytes-per-pack`
// then "," are three runs with no space between, and only the first was ever broken before.
TEST(LessonText, AWordGluedToACodeRunBreaksAsOne) {
  Paragraph p;
  p.runs = {{"before its backward ended, never with one pack. mirrorlab packs the same way (",
             RunStyle::kPlain},
            {"--bytes-per-pack", RunStyle::kCode},
            {", \"KiB a pack\" in the Controls) and sends each pack", RunStyle::kPlain}};
  const std::vector<std::string> lines = lines_of(wrap_paragraphs({p}, 80, false));
  ASSERT_GE(lines.size(), 2u);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(lines[0],
            "before its backward ended, never with one pack. mirrorlab packs the same way");
  EXPECT_EQ(lines[1].rfind("(--bytes-per-pack, \"KiB a pack\"", 0), 0u) << lines[1];
}

// A question, an answer or a check: its first line after what is printed before it, the rest
// indented; a word longer than the width stays whole on its own line.
TEST(LessonText, ALineWrapsAfterItsLeadWithAHangingIndent) {
  const std::string says =
      "no all-reduce runs while backward does: allreduce_hidden_percent = 0 (equals 0)";
  const std::vector<std::string> lines = lines_of("[pass] " + wrap_line(says, 80, 7, "  "));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "[pass] no all-reduce runs while backward does: allreduce_hidden_percent = 0");
  EXPECT_EQ(lines[1], "  (equals 0)");
  EXPECT_EQ(wrap_line("short words", 80, 10, "  "), "short words");
  const std::string long_word(30, 'x');
  EXPECT_EQ(wrap_line("a " + long_word + " b", 20, 0, "  "), "a\n  " + long_word + "\n  b");
  EXPECT_EQ(wrap_line("", 20, 0, "  "), "");
  // A line break of the text's own (an error's second line) starts a line, indented too.
  EXPECT_EQ(wrap_line("first line\nsecond", 80, 10, "  "), "first line\n  second");
  EXPECT_EQ(wrap_line("ends with a break\n", 80, 0, "  "), "ends with a break");
}

}  // namespace
