// The words said of a mistyped name (files/field_words.h): the name most likely meant, by a
// letter or two (a swap of neighbours counting as one) or the one name it begins, and nothing
// where none is near.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "files/field_words.h"

namespace {

namespace words = mirrorlab::files::field_words;

const std::vector<std::string> kCommands = {"train",   "bench", "compare",
                                            "devices", "gui",   "lesson"};

TEST(FieldWords, AMistypedNameIsTheNearestOne) {
  EXPECT_EQ(words::nearest_name("trian", kCommands), "train");  // two letters swapped
  EXPECT_EQ(words::nearest_name("devcies", kCommands), "devices");
  EXPECT_EQ(words::nearest_name("gu", kCommands), "gui");        // one letter missing
  EXPECT_EQ(words::nearest_name("TRAIN", kCommands), "train");   // whatever the case
  EXPECT_EQ(words::nearest_name("comp", kCommands), "compare");  // the one name it begins
  EXPECT_EQ(words::nearest_name("rign", {"auto", "ring", "one-shot"}), "ring");
  EXPECT_EQ(words::nearest_name("dgx-h10", {"dgx-h100-2-nodes", "dgx-h100", "pcie-2"}), "dgx-h100");
}

TEST(FieldWords, NothingIsMeantWhereNoNameIsNear) {
  EXPECT_EQ(words::nearest_name("frobnicate", kCommands), "");
  EXPECT_EQ(words::nearest_name("x", kCommands), "");
  EXPECT_EQ(words::nearest_name("", kCommands), "");
  EXPECT_EQ(words::nearest_name("tr", kCommands), "");  // too short to be the one it begins
  EXPECT_EQ(words::nearest_name("de", {"devices", "dense"}), "");
  EXPECT_EQ(words::nearest_name("train", {}), "");
  EXPECT_EQ(words::nearest_name(std::string(100000, 'a'), kCommands), "");  // a pasted line
  EXPECT_EQ(words::did_you_mean("frobnicate", kCommands), "");
  EXPECT_EQ(words::did_you_mean("trian", kCommands), " (did you mean train?)");
}

}  // namespace
