// The presenter layout's caption strip holds a step in two columns, each scrolling on its own:
// the step's text on the left, what it asks on the right (its questions with their answers and
// explanations, its checks, the score). A fixed split left one column scrolling while the other
// stood half empty: measured at 1280x720, font scale 1.5, the text of lesson 10 step 4 (no
// question) hid 796 px beside an empty column, and most steps hid more of what they ask than of
// their text. So the text's share of the width follows what each column holds, in characters,
// once the step is done: lines of equal width, columns of about equal height.
#pragma once

#include <cstddef>

#include "lessons/player/lesson.h"

namespace mirrorlab::gui {

// The share of the strip's width the text column gets, at least kLeastTextShare (the questions
// wrap in too narrow a column) and at most kMostTextShare (the score and the buttons' advice stay
// readable beside it).
inline constexpr float kLeastTextShare = 0.35f;
inline constexpr float kMostTextShare = 0.75f;
// More only for a word that would not show whole in less (a long name in code).
inline constexpr float kWidestTextShare = 0.9f;
float strip_text_share(std::size_t text_characters, std::size_t asked_characters);

// What a step's columns hold, in characters: its paragraphs (code included), and its questions
// (with their choices and explanations, and room for the answer's line), checks and the score;
// or `asking`, while the step waits for predictions: its questions with their choices and
// fields, the run's button, a line for the checks and the score (no explanation, no check yet).
// Measured at 1280x720, font 1.5, lesson 8 step 3 asked in 60% of the width beside its text
// hiding 138 px, its questions' column half empty below them.
std::size_t text_characters(const lessons::LessonStep& step);
std::size_t asked_characters(const lessons::LessonStep& step, bool asking = false);

inline float strip_text_share(const lessons::LessonStep& step, bool asking = false) {
  return strip_text_share(text_characters(step), asked_characters(step, asking));
}

}  // namespace mirrorlab::gui
