// Figures of a run a class is asked about, computed once for the lessons' live values
// (lessons/player/live_values.cpp) and the GUI's panels that show them: the bytes one replica
// moves in the all-reduce, how much the summed gradient weighs, the time of a step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/session/step_recorder.h"
#include "core/session/training_session.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

// Bytes replica `replica` receives (`received`) or sends in the recorded all-reduce's first
// `steps` steps (or as many as are recorded). nullopt before the all-reduce's first step.
std::optional<double> all_reduce_bytes(const RecordedStep& record, int replica, bool received,
                                       std::size_t steps = SIZE_MAX);

// How much the step's summed gradient weighs against the mean gradient one device computes on
// the same batch: the sum over replicas of loss scale x examples (1 when the loss is scaled
// right). nullopt before the split.
std::optional<double> gradient_weight(const RecordedStep& record, LossScaling scaling);

// Over the recorded layer's kept values: the largest difference between two replicas' gradients
// before the all-reduce (`before`) or after it. nullopt where a replica has none recorded.
std::optional<double> gradient_spread(const RecordedStep& record, bool before);

// Whether every replica's weights have the same fingerprint after the recorded step; nullopt
// with no replica or one without a fingerprint yet.
std::optional<bool> weights_in_sync(const RecordedStep& record);

// Mean time of the last `last` steps (or fewer), in milliseconds; nullopt before the first.
std::optional<double> mean_step_ms(const std::vector<StepRecord>& steps, std::size_t last = 20);

}  // namespace mirrorlab::core
