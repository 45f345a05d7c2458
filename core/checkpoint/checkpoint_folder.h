// A folder of checkpoints, one pair of files per saved step (core/checkpoint/checkpoint.h):
//   ckpt-00000030.safetensors, ckpt-00000030.json, ckpt-00000060.safetensors, ...
// Each file is written whole or not at all (core::OutputFile), the weights first: a state file is
// only ever there with its weights beside it, so a run killed while saving leaves the newest
// complete checkpoint as it was. Files of other names are never touched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"

namespace mirrorlab::core {

struct CheckpointEntry {
  std::int64_t step = 0;
  std::filesystem::path state, weights;
};

// Whether `name` is the name a checkpoint's state or weights file takes in a folder
// ("ckpt-00000030.json", "ckpt-00000030.safetensors").
bool is_checkpoint_file_name(const std::string& name);

class CheckpointFolder {
 public:
  explicit CheckpointFolder(std::filesystem::path folder) : folder_(std::move(folder)) {}
  const std::filesystem::path& path() const { return folder_; }

  // Creates the folder (and its parents) when missing and checks a file can be written in it.
  // Throws OutputFileError saying why not.
  void prepare() const;
  // The checkpoints there (those with a state file), oldest first. Empty when the folder is
  // missing. Throws CheckpointError when `path` is not a folder.
  std::vector<CheckpointEntry> list() const;
  // Writes `checkpoint` as the one of its step (replacing an earlier one of that step), then
  // removes all but the newest `keep` (0: keeps all). Returns it. Throws OutputFileError when a
  // file cannot be written; the checkpoints already there are then as they were.
  CheckpointEntry save(const Checkpoint& checkpoint, int keep);
  // Reads and checks one. Throws CheckpointError naming the file and what is wrong.
  Checkpoint load(const CheckpointEntry& entry) const;
  // The newest; throws CheckpointError when there is none.
  CheckpointEntry newest() const;

 private:
  std::filesystem::path folder_;
};

}  // namespace mirrorlab::core
