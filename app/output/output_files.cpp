#include "app/output/output_files.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "app/output/interrupt.h"

namespace mirrorlab::app {

void OutputFiles::add_input(const std::string& flag, const std::string& path) {
  if (!path.empty()) inputs_.emplace(flag, path);
}

std::string OutputFiles::add(const std::string& flag, const std::string& path, bool hold) {
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
