// A checkpoint of a running fit, and a fit that goes on from one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

// The run's settings as a checkpoint keeps them: `settings`, those `strategy` and `loop` were
// made with, and the training set's size. `train_crc32`: dataset_crc32 of the loop's training
// set (computed once by the caller: it reads every pixel).
CheckpointConfig checkpoint_config(const RunSettings& settings, const MirroredStrategy& strategy,
                                   const FitLoop& loop, std::uint32_t train_crc32);

// Host thread, between steps (also after the run ended): everything the run needs to go on.
Checkpoint capture_checkpoint(MirroredStrategy& strategy, const FitLoop& loop,
                              const CheckpointConfig& config);

// What is different about `now` from the run that wrote `saved`, in sentences (the number of
// replicas, the batch, the algorithm, the run's length); empty when nothing is.
std::vector<std::string> checkpoint_changes(const CheckpointConfig& saved,
                                            const CheckpointConfig& now);

// Makes a fresh run (`strategy` and `loop` before their first step, `now` their settings) go on
// from `checkpoint`, read from `file` (named in the errors). Throws CheckpointError naming what
// differs (the model, the optimizer, the loss scaling, the training data, the shuffled order, an
// epoch past this run's epochs) before anything is loaded: nothing is half-loaded.
void restore_checkpoint(const Checkpoint& checkpoint, const std::filesystem::path& file,
                        const CheckpointConfig& now, MirroredStrategy& strategy, FitLoop& loop);

}  // namespace mirrorlab::core
