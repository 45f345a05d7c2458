// Sentences about the run that several panels print, so that the panel a lesson's step frames
// shows the figure its question asks, worded the same everywhere: the examples each replica got,
// how much the summed gradient weighs, how long a step takes. Each is "" when there is nothing
// to say yet.
#pragma once

#include <string>

#include "gui/panels/panel.h"

namespace mirrorlab::gui {

// "Examples per replica: /gpu:0 16, /gpu:1 16, /gpu:2 16".
std::string shards_line(const core::RecordedStep& record);

// "The summed gradient weighs 0.667 x one device's mean gradient on this batch (loss scaling
// replica-mean)". Not said with several workers (the record holds worker 0's replicas alone).
std::string gradient_weight_line(const FrameContext& frame);

// "Against one device trained on the same batches, the largest weight difference is 1.2e-07."
// (one worker of as many devices, where the run has several workers), once a lesson's step has
// measured it.
std::string reference_distance_line(const FrameContext& frame);

// "A step takes 14.1 ms (the mean of the last 20)".
std::string step_time_line(const core::SessionSnapshot& run);

}  // namespace mirrorlab::gui
