// core/session/text/console_text.h: UTF-8 text cut and counted by its characters.
#include <gtest/gtest.h>

#include <string>

#include "core/session/text/console_text.h"

namespace mirrorlab::core {
namespace {

// "é" is 2 bytes, "━" 3, "𝑥" 4: a cut never lands inside one, whichever byte it aims at.
TEST(ConsoleText, ACutNeverFallsInsideACharacter) {
  const std::string s = "a\u00e9\u2501\U0001D465z";  // a é ━ 𝑥 z: bytes 0, 1-2, 3-5, 6-9, 10
  ASSERT_EQ(s.size(), 11u);
  const std::size_t expected[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11, 11};
  for (std::size_t at = 0; at < sizeof expected / sizeof expected[0]; ++at) {
    EXPECT_EQ(character_boundary(s, at), expected[at]) << at;
  }
  EXPECT_EQ(character_boundary("", 5), 0u);
  EXPECT_EQ(character_count(s), 5u);
  EXPECT_EQ(character_count("plain"), 5u);
  EXPECT_EQ(character_count(repeat("\u2501", 20)), 20u);
  EXPECT_FALSE(continues_character('a'));
  EXPECT_FALSE(continues_character(s[1]));  // a character's first byte
  EXPECT_TRUE(continues_character(s[2]));
}

}  // namespace
}  // namespace mirrorlab::core
