#include "gui/panels/lesson/strip_columns.h"

#include <algorithm>
#include <string>

namespace mirrorlab::gui {
namespace {

// Room for the lines the column draws that the lesson file does not hold: a question's
// "Answer: ... (you said ...)" line, a check's "pass" and value, the score line ("Played steps
// 1, 2 (2 of the 4 steps played); checks passed: 3 of 3; predictions right: 1 of 2. Page Down:
// more, the run, then the next step; Page Up: back.").
constexpr std::size_t kAnswerLine = 40;
constexpr std::size_t kCheckMark = 12;
constexpr std::size_t kScoreLine = 150;
// While asking: "Run the step and show me", and "The checks run once the step has."
constexpr std::size_t kRunButton = 25;
constexpr std::size_t kChecksLater = 35;

}  // namespace

float strip_text_share(std::size_t text_characters, std::size_t asked_characters) {
  const std::size_t all = text_characters + asked_characters;
  if (all == 0) return kMostTextShare;
  const float share = static_cast<float>(text_characters) / static_cast<float>(all);
  return std::clamp(share, kLeastTextShare, kMostTextShare);
}

std::size_t text_characters(const lessons::LessonStep& step) {
  std::size_t n = 0;
  for (const lessons::Paragraph& p : step.text) n += p.plain().size();
  return n;
}

std::size_t asked_characters(const lessons::LessonStep& step, bool asking) {
  std::size_t n = kScoreLine;
  for (const lessons::Question& q : step.questions) {
    n += q.ask.size() + (asking ? 0 : q.explain.size()) + kAnswerLine;
    for (const std::string& choice : q.choices) n += choice.size();
  }
  if (asking) return n + kRunButton + (step.checks.empty() ? 0 : kChecksLater);
  for (const lessons::Check& c : step.checks) n += c.says.size() + kCheckMark;
  return n;
}

}  // namespace mirrorlab::gui
