// model.summary() as Keras 3 prints it (TensorFlow 2.21, on an 80-column terminal or a log;
// checked by scripts/check-tensorflow): a box-drawn table of layers, output shapes and parameter
// counts, then the totals with their size in memory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/nn/model.h"

namespace mirrorlab::core {

std::string with_commas(std::size_t n);          // 693962 -> "693,962"
std::string readable_memory_size(double bytes);  // Keras': 2775848 -> "2.65 MB"
std::string model_summary(const Model& model, const std::string& name);
// The same table of `model`'s layers but those named in `folded`: layers Keras counts as part of
// the one before (the Python module's Dense(..., activation="relu") is one layer in Keras, a
// Dense and a ReLU in the core). Their parameters still count in the totals.
std::string model_summary(const Model& model, const std::string& name,
                          const std::vector<std::string>& folded);

}  // namespace mirrorlab::core
