// Plays a lesson headless, step by step, as the lesson tests and the course tests both do.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lessons/player/lesson.h"
#include "lessons/player/player.h"

namespace mirrorlab::lessons {

// Plays every step; returns the checks that failed, as "step: says".
inline std::vector<std::string> failed_checks(LessonPlayer& player) {
  std::vector<std::string> failed;
  for (int i = 0; i < static_cast<int>(player.lesson().steps.size()); ++i) {
    player.enter(i);
    EXPECT_TRUE(player.run_actions(60)) << "step " << i;
    for (const Check& c : player.step().checks) {
      if (!player.evaluate(c).passed) failed.push_back(std::to_string(i + 1) + ": " + c.says);
    }
  }
  return failed;
}

}  // namespace mirrorlab::lessons
