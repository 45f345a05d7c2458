// A checkpoint: all a run needs to go on bit for bit. Two files side by side (docs/checkpoints.md):
//   ckpt-00000030.safetensors  the weights and the optimizer's slots, float32, one tensor each
//   ckpt-00000030.json         the format and version, the configuration, the optimizer's
//                              progress, the position in the epoch and the shuffle, the history,
//                              the weights file's size and CRC-32, and its own CRC-32
// The state file is written last, so a state file always has its weights beside it.
//
// encode_checkpoint() gives both files' bytes; decode_checkpoint() takes them and checks
// everything (JSON, format, version, both checksums, the tensors against the state) and throws
// CheckpointError naming the file and what is wrong, never anything else: a fuzzer can call it on
// any bytes. Whether a checkpoint fits a run (the model, the data) is checked by
// restore_checkpoint (core/checkpoint/run_checkpoint.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/dataset.h"
#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/settings/run_settings.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::core {

inline constexpr const char* kCheckpointFormat = "mirrorlab-checkpoint";
// Version 2 keeps the run's settings as core/settings writes them; version 1 files (the settings
// spelled out by hand, the optimizer as an object) are still read.
inline constexpr int kCheckpointVersion = 2;

// A checkpoint file that cannot be used: what() is "<file>: <what differs or is wrong>".
class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(const std::filesystem::path& file, const std::string& problem)
      : std::runtime_error(file.string() + ": " + problem), file_(file), problem_(problem) {}
  const std::filesystem::path& file() const { return file_; }
  const std::string& problem() const { return problem_; }

 private:
  std::filesystem::path file_;
  std::string problem_;
};

// The settings of the run that wrote the checkpoint.
struct CheckpointConfig {
  // Its settings; train_examples is the training set's size (never 0, "all").
  RunSettings settings;
  int replicas = 1;
  std::vector<std::string> devices;  // their names, "/gpu:0", ...
  std::uint32_t train_crc32 = 0;     // dataset_crc32 of the training set
};

struct Checkpoint {
  CheckpointConfig config;
  std::vector<WeightTensor> tensors;  // the model's, as Model::weight_tensors()
  ReplicaState state;                 // weights, optimizer slots and progress
  FitPosition position;
  // CRC-32 of the open epoch's shuffled order (its uint32 indices, little-endian): a resumed run
  // checks it gets the same order. 0 when no epoch is open.
  std::uint32_t order_crc32 = 0;
};

struct CheckpointBytes {
  std::string state;    // the .json file
  std::string weights;  // the .safetensors file
};

// `weights_file`: the name the state file gives its weights (the file name, no folder).
CheckpointBytes encode_checkpoint(const Checkpoint& checkpoint, const std::string& weights_file);
// The two files' bytes, and their paths for the errors (and the weights file's name, which the
// state must give).
Checkpoint decode_checkpoint(std::string_view state, std::string_view weights,
                             const std::filesystem::path& state_file,
                             const std::filesystem::path& weights_file);

// zlib's CRC-32 of `bytes`.
std::uint32_t crc32_of(std::string_view bytes);
// CRC-32 of a data set's size, labels and pixels: what a resumed run checks it trains on.
std::uint32_t dataset_crc32(const Dataset& data);
// CRC-32 of an order of examples, as Checkpoint::order_crc32.
std::uint32_t order_crc32(const std::vector<std::uint32_t>& order);

}  // namespace mirrorlab::core
