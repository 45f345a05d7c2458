// The fit of `mirrorlab compare`: what it measures on the devices at hand (vgpu::FitPlan), the
// topology it fits to what was measured, and the recordings (vgpu/fit_recording.h) that keep
// what a fit or a check measured, so that `--replay` fits or checks again from them, measuring
// nothing.
#pragma once

#include <string>
#include <vector>

#include "app/compare/compare_options.h"
#include "app/output/output_files.h"
#include "timing/topology.h"
#include "virtualgpu/measure/fit_recording.h"
#include "virtualgpu/measure/topology_fit.h"

namespace mirrorlab::app {

// The counts the model is checked on: 2, 4, 8, ... up to `devices`, and `devices`.
std::vector<int> compared_device_counts(int devices);

// What a fit measures on `devices` devices, round by round: the memory from 1 MiB to every
// device's largest buffer, all-reduces of 4 to 64 KiB (the latencies, each size timed as long as
// `check_sweep` times one) and `check_sweep`.
vgpu::FitPlan fit_plan(int devices, const CompareOptions& options,
                       const vgpu::AllReduceBenchOptions& check_sweep);

// A recording, empty yet, of what is measured here today on `devices` (date, CPU, engines
// filled in).
vgpu::FitRecording recording_here(vgpu::FitRecording::Kind kind,
                                  const std::vector<vgpu::Device*>& devices);

// The model fitted to a fit's recording: the memory's curves and the latencies, its title and
// source saying where and when it was measured (and, `replayed_from` not empty, that it was
// fitted again from that file today). Prints the fitted parameters.
timing::Topology fit_recorded(const vgpu::FitRecording& recording,
                              const std::string& replayed_from = "");

// Writes the fitted topology to the file held for --output; throws std::runtime_error when it
// cannot be written. Says where it went.
void save_fit(const timing::Topology& fitted, OutputFiles& files, const std::string& path);
// Writes `recording` to the file held for --record, if any, and says so; a sentence on stderr
// when it cannot be written (what was measured is still printed).
void save_recording(const vgpu::FitRecording& recording, OutputFiles& files,
                    const std::string& path);

// `mirrorlab compare --replay FILE`: the fit (or the check) of a recording done again, measuring
// nothing; exit status as run_compare's.
int replay_compare(const CompareOptions& options);

}  // namespace mirrorlab::app
