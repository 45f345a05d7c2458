// model.summary() as Keras 3 prints it (TensorFlow 2.21, on an 80-column terminal or a log;
// checked by scripts/check-tensorflow): a box-drawn table of layers, output shapes and parameter
// counts, then the totals with their size in memory.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/nn/model.h"

namespace mirrorlab::core {

std::string with_commas(std::size_t n);          // 693962 -> "693,962"
std::string readable_memory_size(double bytes);  // Keras': 2775848 -> "2.65 MB"
std::string model_summary(const Model& model, const std::string& name);

// Where the Python module's layers are not the core's one for one.
struct KerasRows {
  // Layers Keras counts as part of the one before (a Dense(..., activation="relu") is one layer
  // in Keras, a Dense and a ReLU in the core): no row; their parameters still count in the totals.
  std::vector<std::string> folded;
  // A layer's type as Keras names it, by layer name, where it is not the core's (an
  // Activation("relu") is a ReLU layer in the core, "Activation" in Keras' table).
  std::map<std::string, std::string> types;
};
std::string model_summary(const Model& model, const std::string& name, const KerasRows& rows);

}  // namespace mirrorlab::core
