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

}  // namespace mirrorlab::timing
