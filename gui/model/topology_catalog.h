// The machines the timing model can be shown on, for the Compare and All-reduce panels: the
// presets (timing/topologies/), read once, and this machine's fit (the file `mirrorlab compare
// --fit` saves), read again whenever that file changes, so a fit made while the window is open
// shows up in it. A fit that is missing or cannot be read is an entry with a sentence saying what
// to do, never an error: the rest of the window works without it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "timing/topology.h"

namespace mirrorlab::gui {

// The most GPUs a machine may have to be shown: beyond it, an all-reduce's schedule (one-shot's
// moves grow as the square of the GPUs) would hold the window up for seconds.
inline constexpr int kMostGpusShown = 256;

struct ModelMachine {
  std::string id;                            // "dgx-h100", ..., a file's path, "this-machine"
  std::optional<timing::Topology> topology;  // absent: `problem` says why
  std::string problem;
};

class TopologyCatalog {
 public:
  // `presets`: the folder of preset files; `fit_file`: where this machine's fit is saved (empty:
  // nowhere, as when neither HOME nor XDG_CONFIG_HOME is set).
  TopologyCatalog(const std::filesystem::path& presets, std::filesystem::path fit_file);
  // The presets' folder and the fit's file of `mirrorlab compare`.
  TopologyCatalog();

  // A topology file of the user's (`--topology FILE`, as compare takes one): read and added
  // before this-machine, its path as its id (its problem, if it cannot be read or drawn, said
  // when it is chosen). Nothing for a preset's id or this-machine.
  void add_file(const std::string& path);

  // Reads the fit file again if it changed since it was last read; looks at most once a second
  // (`now_seconds`: any clock that only goes up).
  void refresh(double now_seconds);

  // The presets by id, the files added, then this-machine (always present, always last).
  const std::vector<ModelMachine>& machines() const { return machines_; }
  const ModelMachine* find(std::string_view id) const;
  const ModelMachine& fitted() const { return machines_.back(); }
  // Why the presets could not be read ("" when they were).
  const std::string& presets_problem() const { return presets_problem_; }
  // Changes whenever an entry does: what a panel computed from the catalog is stale after it.
  std::uint64_t version() const { return version_; }

 private:
  void read_fit();

  std::filesystem::path fit_file_;
  std::vector<ModelMachine> machines_;
  std::string presets_problem_;
  std::uint64_t version_ = 1;
  double last_look_ = -1;
  // What the fit file was when last read: absent, or its time and size.
  bool fit_existed_ = false;
  std::filesystem::file_time_type fit_time_{};
  std::uintmax_t fit_size_ = 0;
};

// What a panel says in place of a prediction when there is no fit at `fit_file`: run
// `mirrorlab compare --fit`, what that does, and where it saves it.
std::string not_fitted_sentence(const std::filesystem::path& fit_file);

}  // namespace mirrorlab::gui
