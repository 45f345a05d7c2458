// Fuzz target: the reader of the timing model's recordings (virtualgpu/measure/fit_recording.h), as
// `mirrorlab compare --replay FILE` reads what a fit or a check saved. Any input must read or be
// refused with a RecordingError; a recording it returns must write back to a text that reads to
// the same text again. Anything else (another exception, a crash, a sanitizer's report, an input
// that takes seconds) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_input.h"
#include "virtualgpu/measure/fit_recording.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mirrorlab::vgpu;
  const std::string text(mirrorlab::fuzz::as_text(data, size));
  FitRecording recording;
  try {
    recording = parse_fit_recording(text, "fuzz.json");
  } catch (const RecordingError&) {
    return 0;
  }
  const std::string written = write_fit_recording(recording);
  const FitRecording again = parse_fit_recording(written, "again.json");  // must not throw
  if (write_fit_recording(again) != written) std::abort();
  return 0;
}
