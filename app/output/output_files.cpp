#include "app/output/output_files.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "app/output/interrupt.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/checkpoint_folder.h"
#include "virtualgpu/measure/fit_recording.h"

namespace mirrorlab::app {
namespace {

// What an existing file of mirrorlab's is, when it is one an output of another kind must not
// replace (a checkpoint cannot be trained again in a moment; a GPU's recording cannot be made
// without the GPU): "a checkpoint's file", "a recording", else "". Told by its name or by the
// format its first bytes name.
std::string kept_kind(const std::filesystem::path& path, OutputFiles::Writes* kind) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return "";
  const std::string checkpoint = "a checkpoint's file";
  if (core::is_checkpoint_file_name(path.filename().string())) return checkpoint;
  std::ifstream in(path, std::ios::binary);
  std::string head(std::size_t{64} << 10, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  const auto names = [&head](const char* format) {
    return head.find(std::string("\"") + format + "\"") != std::string::npos;
  };
  if (names(core::kCheckpointFormat)) return checkpoint;
  if (names(vgpu::kFitRecordingFormat)) {
    *kind = OutputFiles::Writes::kRecording;
    return "a recording of 'mirrorlab compare --record'";
  }
  return "";
}

}  // namespace

void OutputFiles::add_input(const std::string& flag, const std::string& path) {
  if (!path.empty()) inputs_.emplace(flag, path);
}

std::string OutputFiles::add(const std::string& flag, const std::string& path, bool hold,
                             Writes writes) {
  if (path.empty()) return "";
  for (const auto& [input_flag, input_path] : inputs_) {
    if (core::same_file(path, input_path)) {
      return flag + " " + path + ": that is the file " + input_flag + " " + input_path +
             " reads, which this command would replace; write to another file";
    }
  }
  for (const auto& [other_flag, other_path] : paths_) {
    if (core::same_output_path(path, other_path)) {
      return flag + " " + path + ": " + other_flag + " writes the same file; give each its own";
    }
  }
  Writes kind = Writes::kOther;
  if (const std::string kept = kept_kind(path, &kind);
      !kept.empty() && !(kind == Writes::kRecording && writes == Writes::kRecording)) {
    return flag + " " + path + ": that is " + kept + ", which " + flag + " would replace; write " +
           flag + " to another file";
  }
  try {
    core::OutputFile file = core::OutputFile::create(path);
    if (hold) held_.emplace(flag, std::move(file));
  } catch (const core::OutputFileError& e) {
    return flag + " " + e.what();
  }
  paths_.emplace(flag, path);
  return "";
}

core::OutputFile* OutputFiles::find(const std::string& flag) {
  const auto it = held_.find(flag);
  return it == held_.end() || !it->second.is_open() ? nullptr : &it->second;
}

std::string write_output(OutputFiles& files, const std::string& flag, const std::string& text) {
  core::OutputFile* file = files.find(flag);
  if (file == nullptr) return "";
  try {
    file->write(text);
    file->commit();
  } catch (const core::OutputFileError& e) {
    return flag + " " + e.what();
  }
  return "";
}

int finish_stdout(int status) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::ferror(stdout)) return status;
  if (interrupt_signal() == SIGPIPE) {
    // The reader went away (`| head`): what it did not read is no error of ours to report, but
    // the output stopped short, as the status of a process SIGPIPE stops says.
    return status != 0 ? status : interrupt_exit_status(SIGPIPE);
  }
  std::fprintf(stderr, "mirrorlab: error: writing to standard output failed: %s\n",
               error != 0 ? std::strerror(error) : "an earlier write was refused");
  return 1;
}

}  // namespace mirrorlab::app
