// What a panel shows while a lesson's step waits for the class's predictions: not what the step
// will show (a picture of a step not yet run, or the timing model's numbers that answer the
// step's questions), but a sentence saying it appears once the step runs.
#pragma once

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// While a lesson's step waits for the class's predictions: says that `what` appears once the
// step runs, and returns true; the panel draws nothing else and leaves its room to the step's
// text (it does not say fills_room()). Else false.
bool shows_the_lesson_asks(const FrameContext& frame, const char* what);

}  // namespace mirrorlab::gui
