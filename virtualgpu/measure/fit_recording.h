// What a fit or a check of the timing model measured (topology_fit.h), saved as JSON, so that the
// model can be fitted and checked again without the machine: a GPU lent for minutes, a run to
// compare a changed model with, a class's laptop. A fit's recording holds the memory by working
// set, the small all-reduces its latencies were fitted to and the sizes it was checked at; a
// check's, the sizes it measured and the memory before and after. Each all-reduce is saved as
// what was measured (algorithm, devices, bytes, seconds): its schedule is the algorithm's as
// this build models it, so a recording outlives changes to the schedules.
#pragma once

#include <stdexcept>
#include <string>

#include "files/file_error.h"
#include "virtualgpu/devices/device_registry.h"
#include "virtualgpu/measure/topology_fit.h"

namespace mirrorlab::vgpu {

// The "format" a recording's JSON opens with.
inline constexpr const char* kFitRecordingFormat = "mirrorlab compare measurements";

struct FitRecording {
  enum class Kind { kFit, kCheck };
  Kind kind = Kind::kFit;
  std::string date;          // "2026-11-27", UTC
  std::string machine;       // the CPU's model name
  int devices = 0;           // how many were measured (each sample names its own count)
  bool cuda = false;         // CUDA devices (logical GPUs of one card), else CPU virtual GPUs
  int engines = 0;           // engine_count() of the devices
  bool interrupted = false;  // stopped before all was measured: it holds what was
  FitMeasurements measured;  // a check: no memory or latency samples
  // A check: the memory over its largest working set before and after (bytes 0: not measured).
  timing::MemorySample memory_before, memory_after;
};
const char* to_string(FitRecording::Kind kind);  // "fit", "check"

// A recording that cannot be used: the file and what was wrong with it, in words that say what
// to do.
class RecordingError : public files::FileError {
 public:
  RecordingError(const std::string& file, const std::string& what) : FileError(file, 0, what) {}
  // A fit interrupted before it measured enough to fit from: a whole file, but too little in it
  // (what to do is to measure again, not to find another file).
  bool interrupted_too_soon = false;
};

// The fewest small all-reduces a fit is fitted from: one for each latency (call, step, move).
inline constexpr std::size_t kMinLatencySamples = 3;
// Whether a fit's recording holds enough to fit from (its memory, and kMinLatencySamples small
// all-reduces): one interrupted may not, and the reader refuses it then.
bool fittable(const FitRecording& r);

// The most devices and samples a recording may hold: more than any machine measures (a fit on
// 64 devices holds about 250 all-reduces, of 4 devices about 50), few enough that a recording
// cannot make its reader build schedules for minutes: the all-reduces' devices squared (a
// schedule's moves grow so), summed, stay under kMaxRecordedLoad.
inline constexpr int kMaxRecordedDevices = DeviceRegistry::kMaxDevices;
inline constexpr std::size_t kMaxRecordedSamples = 10000;
inline constexpr double kMaxRecordedLoad = 1 << 20;

std::string write_fit_recording(const FitRecording& recording);  // JSON text
// Throws RecordingError for text that is not a recording this build reads: not JSON, another
// format or a newer version, a field missing or of the wrong type, a count, size, time or
// bandwidth outside the range it can have (sizes 1 byte to 1 PB, memory bandwidths 1 MB/s to
// 100 TB/s, as a topology file's; a peer bandwidth may be 0: not measured), an all-reduce on
// fewer than 2 or more than `devices` devices, an algorithm without a schedule, a fit with fewer
// than 3 small all-reduces to fit its 3 latencies to, or more than the limits above.
FitRecording parse_fit_recording(const std::string& text, const std::string& file_name);
FitRecording read_fit_recording(const std::string& path);

}  // namespace mirrorlab::vgpu
