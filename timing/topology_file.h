// Topology files: TOML, read with toml++, one machine each (timing/topologies/README.md shows
// the format). Presets live in timing/topologies/; any file of the same form can be given
// instead. A topology fitted to this machine (by `mirrorlab compare`) is written in the same form.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "files/file_error.h"
#include "timing/topology.h"

namespace mirrorlab::timing {

// The ranges a machine's numbers can have in a topology file, each past what any machine has at
// both ends, so that a typo (1e-300 for 1e3) is refused, not priced in times of 31 digits. A
// recording of measurements (virtualgpu/measure/fit_recording.h) keeps to the same, so that the
// topology fitted from it reads back.
// - one GPU's FLOP/s: 1 GFLOP/s (less than one CPU core) to 100 PFLOP/s (a hundred H100s);
inline constexpr double kMinTflops = 1e-3, kMaxTflops = 1e5;
// - a bandwidth: 1 MB/s (a slow serial link) to 100 TB/s (over ten times the fastest HBM);
inline constexpr double kMinGBs = 1e-3, kMaxGBs = 1e5;
// - a latency: 0 (none) to 1 s (a link across the world is a tenth of that);
inline constexpr double kMaxLatencyUs = 1e6;
// - a size in a bandwidth curve: 1 byte to 1 PB.
inline constexpr double kMaxCurveBytes = 1e15;

// A topology file that cannot be used: the file, the line (0 when none) and what was expected.
class TopologyError : public files::FileError {
 public:
  using FileError::FileError;
};

Topology read_topology(const std::filesystem::path& file);
Topology parse_topology(const std::string& text, const std::string& file_name);
// The same topology as a file's text (what read_topology reads back).
std::string write_topology(const Topology& topology);

// The presets' folder (the source tree's timing/topologies, unless the build said otherwise).
std::filesystem::path default_topology_folder();
// Where `mirrorlab compare` saves this machine's fitted topology (id "this-machine"):
// $MIRRORLAB_FIT_FILE, else $XDG_CONFIG_HOME/mirrorlab/this-machine.toml, else
// ~/.config/mirrorlab/this-machine.toml; empty when none of those variables is set.
inline constexpr const char* kFittedTopologyId = "this-machine";
std::filesystem::path fitted_topology_file();
// "this-machine" asked for before it was fitted (no file at fitted_topology_file()).
class NotFittedError : public std::invalid_argument {
 public:
  explicit NotFittedError(const std::filesystem::path& file);
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
};
// Every *.toml of the folder, by id.
std::vector<Topology> load_topologies(const std::filesystem::path& folder);
// A preset by id, "this-machine" for the fitted file, or a file by its path (one with a '/' or
// ending in .toml); an unknown id is refused, listing the presets.
Topology find_topology(const std::string& id_or_file, const std::filesystem::path& folder = {});
// Whether find_topology() reads `id_or_file` as a file's path rather than an id.
bool names_a_topology_file(const std::string& id_or_file);

}  // namespace mirrorlab::timing
