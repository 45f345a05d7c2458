// Fuzz target: the topology reader (timing/topology_file.h), as `mirrorlab compare --topology
// FILE`, a lesson's `topology = ...` and the GUI read a machine's file (and this machine's
// fitted one). Any input must read or be refused with a TopologyError; a topology it returns
// must write back (write_topology, as the fit is saved) to a file that reads the same. Anything
// else (another exception, a crash, a sanitizer's report) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_input.h"
#include "timing/topology_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mirrorlab::timing;
  const std::string text(mirrorlab::fuzz::as_text(data, size));
  Topology topology;
  try {
    topology = parse_topology(text, "fuzz.toml");
  } catch (const TopologyError&) {
    return 0;
  }
  const std::string written = write_topology(topology);
  const Topology again = parse_topology(written, "again.toml");  // must not throw
  if (write_topology(again) != written) std::abort();
  return 0;
}
