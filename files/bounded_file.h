// The ground floor of every reader of a user's file (lessons, topologies, checkpoints,
// recordings): the file's bytes, read whole, when it is a regular file no larger than the reader
// can mean. A FIFO or a device (which could be read forever: /dev/zero), a folder, a missing or
// unreadable file and one too large are each refused with a sentence and nothing read past the
// cap. The caller puts its own error type and the name of what the file should be around it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "files/file_error.h"

namespace mirrorlab::files {

// Why a file could not be read: problem() is a sentence without the path ("is not a regular
// file but a folder", "cannot be read: Permission denied"), what() is "<path>: <problem>".
class InputFileError : public FileError {
 public:
  InputFileError(const std::filesystem::path& file, std::string problem, bool missing = false)
      : FileError(file.string(), 0, std::move(problem)), missing_(missing) {}
  bool missing() const { return missing_; }  // there is no such file

 private:
  bool missing_ = false;
};

// The bytes of `file`, which must be a regular file of at most `max_bytes` (`what_it_holds`
// ends the sentence for one too large: "a lesson is a few KiB of Markdown"). Follows symbolic
// links. Throws InputFileError.
std::string read_bounded_file(const std::filesystem::path& file, std::uintmax_t max_bytes,
                              const std::string& what_it_holds);

}  // namespace mirrorlab::files
