// What `mirrorlab compare` prints: the fitted parameters, the model against measurement, and a
// preset's predictions for every algorithm.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "timing/fit.h"
#include "timing/topology.h"

namespace mirrorlab::app {

// The share of the measured time within which the model must predict reduce-to-one and ring
// (issue 14), said beside each row.
inline constexpr double kModelTolerance = 0.25;

// Words of `text` on lines of at most `width` characters, each starting with `prefix`.
void print_wrapped(const std::string& text, const std::string& prefix = "#   ",
                   std::size_t width = 96);

void print_fit(const timing::Topology& fitted, const std::vector<timing::MemorySample>& memory);
void print_check(const timing::Topology& model, const std::vector<timing::Prediction>& rows);
// At each of `sizes` (bytes per GPU).
void print_preset_prediction(const timing::Topology& topology,
                             const std::vector<std::size_t>& sizes);

}  // namespace mirrorlab::app
