// What a panel shows while a lesson's step waits for the class's predictions: not what the step
// will show (a picture of a step not yet run, or the timing model's numbers that answer the
// step's questions), but a sentence saying it appears once the step runs.
#pragma once

#include <string>
#include <string_view>

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// While a lesson's step waits for the class's predictions: says that `what` appears once the
// step runs, and returns true; the panel draws nothing else and leaves its room to the step's
// text (it does not say fills_room()). Else false.
bool shows_the_lesson_asks(const FrameContext& frame, const char* what);

// `shown`, or "?" while a lesson's step waits for the class to predict live value `value` (the
// Devices panel's "Global batch ? = 16 x ? replicas in sync" while lesson 10 asks for both), as
// a worksheet leaves a blank.
std::string blank_if_asked(const FrameContext& frame, std::string_view value, std::string shown);
// Whether the step waiting for predictions asks live value `value` (what blank_if_asked blanks).
bool is_asked(const FrameContext& frame, std::string_view value);
// Whether it asks any live value whose name begins with `prefix` ("allreduce_": the all-reduce's
// steps or bytes).
bool asks_about(const FrameContext& frame, std::string_view prefix);

// The plural's "s" after a number as blank_if_asked() shows it: none after "1", and after a
// blank the plural, so that "? replica" does not say the blank is 1.
const char* plural_s(const std::string& shown);

}  // namespace mirrorlab::gui
