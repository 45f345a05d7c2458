// The training step's table in words (timing/step_time.h): the sentences `mirrorlab compare`
// prints around it and the GUI's Compare panel shows beside the same table, built once here so
// both say the same. Pure functions of numbers and names, as the rest of timing/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "timing/step_time.h"
#include "timing/topology.h"

namespace mirrorlab::timing {

// "4.9 us", "12.30 ms", "1.25 s"
std::string time_text(double seconds);
// "331 MFLOP", "4.70 GFLOP"
std::string flop_text(double flops);
// How a caller writes a time (the terminal: time_text; the GUI its own, with a micro sign).
using SecondsText = std::string (*)(double seconds);

// What computes at once on `topology`, given compute_engines(topology), naming the table's
// 'in turn' column.
std::string engines_sentence(const Topology& topology, int engines);

// The all-reduce of the table: `algorithm` (a name of the table of algorithms), whether it was
// TensorFlow 2.21's choice (auto), and whether it is NCCL (priced by NCCL's own model).
std::string all_reduce_sentence(const std::string& algorithm, bool was_auto, bool nccl);

// One replica's compute scaled to `machine`'s FLOP/s: per example forward and backward FLOPs at
// `batch` examples, plus the update's FLOPs per step, over the machine's FLOP/s; said to be a
// lower bound (a peak FLOP/s). Throws std::invalid_argument where the machine gives no FLOP/s.
std::string flops_compute_sentence(const Topology& machine, double forward, double backward,
                                   double update, std::size_t batch,
                                   SecondsText seconds_text = time_text);

// One replica's compute from its kernels on `machine` (timing/compute_model.h): its launches,
// the FLOPs and bytes of the kernels bound by each, the host's cost, each with the number it is
// priced at, and what is left out.
std::string kernels_compute_sentence(const Topology& machine, const ComputeTime& parts,
                                     SecondsText seconds_text = time_text);

// How the table's columns are made, at `batch` examples per replica.
std::string step_formula_sentence(std::size_t batch);

// The rule: another device pays for itself while it adds at least kPaysForItself of one device's
// images/s.
std::string pays_rule_sentence();

// Where another device stops paying for itself among `rows` (step_times()), the count with the
// most images/s, and why it stops. `larger_batch`: what to call a larger batch per replica where
// the all-reduce is why (the command line names its flag, the GUI its control).
struct StepVerdict {
  std::string verdict;
  std::string why;  // "" when every device paid while sharing engines, or for one device
};
StepVerdict step_verdict(const std::vector<StepTime>& rows, const std::string& larger_batch,
                         SecondsText seconds_text = time_text);

// What the step model leaves out, in one sentence.
std::string step_left_out_sentence();

}  // namespace mirrorlab::timing
