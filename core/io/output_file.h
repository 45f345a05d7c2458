// Every file mirrorlab writes (history, trace, screenshot, report, and what comes: checkpoints,
// lesson results) is written whole or not at all.
//
// OutputFile::create() makes a temporary file in the destination's folder at once, so a path that
// cannot be written is found before a long run, not after it. Writes go to that file; commit()
// checks every write and the close, fsyncs it, renames it over the destination and fsyncs the
// folder. Anything that fails (a full disk, a write error, an exception, a destructor reached
// without commit()) removes the temporary file and leaves the old file as it was. A path that is
// a symbolic link, a device node, a pipe or a folder is refused: renaming over it would replace
// the link or the device with a regular file. So is a file the user may not write (renaming over
// it would not ask); a file replaced keeps its mode.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mirrorlab::core {

// What went wrong with an output file; what() starts with the path and gives the system's reason.
class OutputFileError : public std::runtime_error {
 public:
  OutputFileError(const std::filesystem::path& path, const std::string& problem)
      : std::runtime_error(path.string() + ": " + problem), path_(path) {}
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class OutputFile {
 public:
  // Creates the temporary file beside `path`. Throws OutputFileError when `path` is empty, a
  // folder, a link, not a regular file, or its folder is missing or not writable.
  static OutputFile create(const std::filesystem::path& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // without commit(): the temporary file is removed, the old file kept

  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }
  // Appends `bytes`. Throws OutputFileError (and abandons the file) when the system refuses.
  void write(std::string_view bytes);
  // Makes the written bytes the file at path(). Throws OutputFileError on failure; the old file
  // is then kept and the temporary removed.
  void commit();
  // Removes the temporary file; the old file stays. Idempotent.
  void abandon() noexcept;

 private:
  OutputFile(std::filesystem::path path, std::filesystem::path temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  [[noreturn]] void fail(const std::string& what, int error);

  std::filesystem::path path_, temp_;
  int fd_ = -1;
  int slot_ = -1;  // in the table of remove_temporary_files_signal_safe(), or -1
};

// Removes the temporary files of every OutputFile not yet committed or abandoned. Only unlink(2)
// on paths kept in a fixed table: safe to call from a signal handler that is about to _exit (a
// second Ctrl-C), so no temporary file is left behind.
void remove_temporary_files_signal_safe() noexcept;

// OutputFile::create() then abandon(): throws when `path` could not be written, leaves nothing.
void check_output_path(const std::filesystem::path& path);
// create(), write(bytes), commit().
void write_file_whole(const std::filesystem::path& path, std::string_view bytes);
// Whether two output paths name the same file (as given, or through their folders' links).
bool same_output_path(const std::filesystem::path& a, const std::filesystem::path& b);
// Whether `a` and `b` are one file: the same path, or, where both exist, the same device and
// inode (through symbolic links and hard links too).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace mirrorlab::core
