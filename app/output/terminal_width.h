// How wide a command's prose is wrapped: the terminal's columns, as `COLUMNS` says or the
// terminal standard output is (where it is one), else 80; never under 40 (a line of a few words
// reads worse than a line the terminal wraps) nor over 100 (longer lines are hard to follow).
#pragma once

namespace mirrorlab::app {

inline constexpr int kNarrowestText = 40, kWidestText = 100, kUsualText = 80;

int terminal_width();

}  // namespace mirrorlab::app
