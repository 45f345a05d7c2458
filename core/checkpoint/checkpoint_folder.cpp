#include "core/checkpoint/checkpoint_folder.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/io/output_file.h"
#include "files/bounded_file.h"

namespace mirrorlab::core {
namespace {

namespace fs = std::filesystem;

// Past this, a file is not one of these models' checkpoints (the CNN with Adam: 8 MiB).
constexpr std::uintmax_t kMaxCheckpointFileBytes = std::uintmax_t{1} << 31;

std::string stem_for(std::int64_t step) {
  char name[48];
  std::snprintf(name, sizeof name, "ckpt-%08lld", static_cast<long long>(step));
  return name;
}

// The step of "ckpt-<digits>.json", or -1 for any other name.
std::int64_t step_of(const std::string& name) {
  const std::string prefix = "ckpt-", suffix = ".json";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 15 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoll(digits);
}

std::string read_whole(const fs::path& file) {
  try {
    return files::read_bounded_file(file, kMaxCheckpointFileBytes,
                                    "far more than a checkpoint of these models");
  } catch (const files::InputFileError& e) {
    throw CheckpointError(file, e.missing() ? "is missing" : e.problem());
  }
}

}  // namespace

bool is_checkpoint_file_name(const std::string& name) {
  const std::string weights = ".safetensors";
  if (name.size() > weights.size() &&
      name.compare(name.size() - weights.size(), weights.size(), weights) == 0) {
    return step_of(name.substr(0, name.size() - weights.size()) + ".json") >= 0;
  }
  return step_of(name) >= 0;
}

void CheckpointFolder::prepare() const {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(folder_, ec)) && !fs::exists(folder_, ec)) {
    throw OutputFileError(folder_, "is a symbolic link to " +
                                       fs::read_symlink(folder_, ec).string() +
                                       ", which does not exist; make that folder, or give another");
  }
  if (!fs::exists(folder_, ec)) {
    fs::create_directories(folder_, ec);
    if (ec) throw OutputFileError(folder_, "cannot be created: " + ec.message());
  }
  if (!fs::is_directory(folder_, ec)) {
    throw OutputFileError(folder_, "is not a folder; give a folder for the checkpoints");
  }
  check_output_path(folder_ / (stem_for(0) + ".json"));  // a temporary, then nothing
}

std::vector<CheckpointEntry> CheckpointFolder::list() const {
  std::vector<CheckpointEntry> entries;
  std::error_code ec;
  if (!fs::exists(folder_, ec)) return entries;
  if (!fs::is_directory(folder_, ec)) {
    throw CheckpointError(folder_, "is not a folder of checkpoints");
  }
  for (const fs::directory_entry& e : fs::directory_iterator(folder_, ec)) {
    const std::int64_t step = step_of(e.path().filename().string());
    if (step < 0) continue;
    entries.push_back({step, e.path(), e.path().parent_path() / (stem_for(step) + ".safetensors")});
  }
  if (ec) throw CheckpointError(folder_, "cannot be listed: " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return entries;
}

CheckpointEntry CheckpointFolder::save(const Checkpoint& checkpoint, int keep) {
  const std::int64_t step = checkpoint.position.history.steps;
  const std::string stem = stem_for(step);
  CheckpointEntry entry{step, folder_ / (stem + ".json"), folder_ / (stem + ".safetensors")};
  const CheckpointBytes bytes = encode_checkpoint(checkpoint, entry.weights.filename().string());
  // Both temporaries first, so a folder that cannot take them fails before anything changes.
  OutputFile weights = OutputFile::create(entry.weights);
  OutputFile state = OutputFile::create(entry.state);
  weights.write(bytes.weights);
  state.write(bytes.state);
  weights.commit();
  state.commit();
  if (keep > 0) {
    const std::vector<CheckpointEntry> all = list();
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i) {
      std::error_code ec;            // a file another process removed first is no error
      fs::remove(all[i].state, ec);  // the state first: never a state without its weights
      fs::remove(all[i].weights, ec);
    }
  }
  return entry;
}

Checkpoint CheckpointFolder::load(const CheckpointEntry& entry) const {
  const std::string state = read_whole(entry.state);
  const std::string weights = read_whole(entry.weights);
  return decode_checkpoint(state, weights, entry.state, entry.weights);
}

CheckpointEntry CheckpointFolder::newest() const {
  const std::vector<CheckpointEntry> all = list();
  std::error_code ec;
  if (!fs::exists(folder_, ec)) throw CheckpointError(folder_, "does not exist");
  if (all.empty()) throw CheckpointError(folder_, "holds no checkpoint (no ckpt-*.json file)");
  return all.back();
}

}  // namespace mirrorlab::core
