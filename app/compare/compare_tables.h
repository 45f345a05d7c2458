// What `mirrorlab compare` prints: the fitted parameters, the model against measurement, and a
// preset's predictions for every algorithm.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "app/output/printed_text.h"
#include "timing/fit.h"
#include "timing/topology.h"

namespace mirrorlab::app {

// The share of the measured time within which the model must predict reduce-to-one and ring
// (issue 14), said beside each row.
inline constexpr double kModelTolerance = 0.25;
// A memory this much faster or slower than when it was fitted is said to have changed.
inline constexpr double kMemoryDriftTolerance = 0.15;

// A comment of the output (`text` after `prefix` on every line), within the terminal's width.
void print_comment(const std::string& text, const std::string& prefix = "#   ");

// A table of figures whose last column is words: beside the others where the terminal is wide
// enough for its longest, else in a table of its own under them, each row named by the first
// column's `keys` (right-aligned under `key_heading`). `headings` and each of `figures`: the
// other columns, laid out.
void print_table_with_words(const std::string& headings, const std::vector<std::string>& figures,
                            const std::string& words_heading, const std::vector<std::string>& words,
                            const std::string& key_heading, const std::vector<std::string>& keys);

void print_fit(const timing::Topology& fitted, const std::vector<timing::MemorySample>& memory);
void print_check(const timing::Topology& model, const std::vector<timing::Prediction>& rows);
// The memory measured before and after the check against the fit's curves (timing::memory_drift),
// and what to do when the machine is no longer what was fitted. Nothing where a sample is missing
// (interrupted) or the model has no curves.
void print_memory_drift(const timing::Topology& model, const timing::MemorySample& before,
                        const timing::MemorySample& after);
// At each of `sizes` (bytes per GPU).
void print_preset_prediction(const timing::Topology& topology,
                             const std::vector<std::size_t>& sizes);

}  // namespace mirrorlab::app
