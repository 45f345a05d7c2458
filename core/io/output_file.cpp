#include "core/io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace mirrorlab::core {
namespace {

std::string reason(int error) { return std::strerror(error); }

const char* kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The temporary files in existence, for remove_temporary_files_signal_safe(). A slot is claimed
// (kWriting), its path written, then listed (kListed); a signal handler reads only listed slots.
// Past kSlots open files the extra ones are not listed (abandon() still removes them).
constexpr int kSlots = 32;
constexpr std::size_t kPathBytes = 4096;
enum SlotState : int { kFree, kWriting, kListed };
struct TempSlot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};
TempSlot g_temp_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int list_temporary(const std::filesystem::path& temp) {
  const std::string& text = temp.native();
  if (text.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_temp_slots[i].state.compare_exchange_strong(expected, kWriting)) continue;
    std::memcpy(g_temp_slots[i].path, text.c_str(), text.size() + 1);
    g_temp_slots[i].state.store(kListed);
    return i;
  }
  return -1;
}

void unlist_temporary(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(kFree);
}

int fsync_folder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int result = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems cannot sync a folder (EINVAL): the file itself is synced already.
  return result == EINVAL ? 0 : result;
}

}  // namespace

OutputFile OutputFile::create(const std::filesystem::path& path) {
  if (path.empty()) throw OutputFileError(path, "no file name given");
  struct stat info {};
  const bool existed = ::lstat(path.c_str(), &info) == 0;
  if (existed) {
    if (S_ISLNK(info.st_mode)) {
      std::error_code ec;
      const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
      throw OutputFileError(path, "is a symbolic link" +
                                      (ec ? std::string() : " to " + target.string()) +
                                      "; mirrorlab replaces a file whole, which would replace the "
                                      "link: give the file's own path");
    }
    if (S_ISDIR(info.st_mode)) {
      throw OutputFileError(path,
                            "that is a folder; give a file name, e.g. " + (path / "out").string());
    }
    if (!S_ISREG(info.st_mode)) {
      throw OutputFileError(path, std::string("is ") + kind_of(info.st_mode) +
                                      ", not a regular file; give a file's path");
    }
    // Replacing is renaming over it, which the folder allows whatever the file's own mode:
    // a file the user could not write (a 0444 result kept on purpose) is not replaced either,
    // nor one no one may write, though root may (access() says yes to root).
    const bool read_only = (info.st_mode & 0222) == 0;
    if (read_only || ::access(path.c_str(), W_OK) != 0) {
      const int error = read_only ? EACCES : errno;
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
      const std::string why = read_only ? "is read-only (mode " : "is not writable for you (mode ";
      throw OutputFileError(path, error == EACCES
                                      ? why + mode +
                                            "), and mirrorlab does not replace such a file: "
                                            "make it writable (chmod u+w) or write elsewhere"
                                      : "cannot be written: " + reason(error));
    }
  } else if (errno != ENOENT) {
    throw OutputFileError(path, "cannot be written: " + reason(errno));
  }
  const std::filesystem::path folder =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  struct stat folder_info {};
  if (::stat(folder.c_str(), &folder_info) != 0) {
    const int error = errno;
    throw OutputFileError(path, error == ENOENT
                                    ? "the folder " + folder.string() +
                                          " does not exist; create it (mkdir -p) or write "
                                          "somewhere else"
                                    : "the folder " + folder.string() + ": " + reason(error));
  }
  if (!S_ISDIR(folder_info.st_mode)) {
    throw OutputFileError(path, folder.string() + " is not a folder");
  }
  // A hidden name in the same folder, so the rename stays within one file system.
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = ".";  // appended piece by piece: GCC 12 warns (wrongly) on "." + string
    name += path.filename().string();
    name += ".mirrorlab-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const std::filesystem::path temp = folder / name;
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      // The file replaced keeps its mode (a private 0600 file stays private); a new one takes
      // 0666 less the umask, as the shell's > gives it.
      if (existed && ::fchmod(fd, info.st_mode & 07777) != 0) {
        const int error = errno;
        ::close(fd);
        ::unlink(temp.c_str());
        throw OutputFileError(path, "cannot keep its mode: " + reason(error));
      }
      OutputFile file(path, temp, fd);
      file.slot_ = list_temporary(temp);
      return file;
    }
    if (errno != EEXIST) {
      const int error = errno;
      throw OutputFileError(
          path, "cannot create a file in " + folder.string() + ": " + reason(error) +
                    (error == EACCES || error == EROFS ? "; write somewhere else" : ""));
    }
  }
  throw OutputFileError(path, "cannot find a free temporary name in " + folder.string());
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      fd_(other.fd_),
      slot_(other.slot_) {
  other.fd_ = -1;
  other.slot_ = -1;
}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    abandon();
    path_ = std::move(other.path_);
    temp_ = std::move(other.temp_);
    fd_ = other.fd_;
    slot_ = other.slot_;
    other.fd_ = -1;
    other.slot_ = -1;
  }
  return *this;
}

OutputFile::~OutputFile() { abandon(); }

void OutputFile::abandon() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_.c_str());
  unlist_temporary(slot_);
  slot_ = -1;
  fd_ = -1;
}

void remove_temporary_files_signal_safe() noexcept {
  for (TempSlot& slot : g_temp_slots) {
    if (slot.state.load() == kListed) ::unlink(slot.path);
  }
}

void OutputFile::fail(const std::string& what, int error) {
  abandon();
  throw OutputFileError(
      path_, what + ": " + reason(error) + " (nothing was written; an earlier file there is kept)");
}

void OutputFile::write(std::string_view bytes) {
  if (fd_ < 0) throw OutputFileError(path_, "written after it was closed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::commit() {
  if (fd_ < 0) throw OutputFileError(path_, "committed after it was closed");
  if (::fsync(fd_) != 0) fail("write failed", errno);
  const int fd = fd_;
  fd_ = -1;
  unlist_temporary(slot_);  // from here on the temporary is renamed or removed right here
  slot_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp_.c_str());
    throw OutputFileError(path_, "write failed: " + reason(error));
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp_.c_str());
    throw OutputFileError(path_, "cannot be replaced: " + reason(error));
  }
  const std::filesystem::path folder =
      path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  if (const int error = fsync_folder(folder); error != 0) {
    throw OutputFileError(path_, "written, but its folder could not be synced: " + reason(error));
  }
}

void check_output_path(const std::filesystem::path& path) { OutputFile::create(path).abandon(); }

void write_file_whole(const std::filesystem::path& path, std::string_view bytes) {
  OutputFile file = OutputFile::create(path);
  file.write(bytes);
  file.commit();
}

bool same_output_path(const std::filesystem::path& a, const std::filesystem::path& b) {
  // Absolute first: weakly_canonical leaves a relative path whose first part does not exist yet
  // as it is, so "new.json" and "./new.json" (that is "/here/new.json") would differ.
  std::error_code ea, eb;
  const std::filesystem::path ca =
      std::filesystem::weakly_canonical(std::filesystem::absolute(a, ea), ea);
  const std::filesystem::path cb =
      std::filesystem::weakly_canonical(std::filesystem::absolute(b, eb), eb);
  if (ea || eb) return a.lexically_normal() == b.lexically_normal();
  return ca == cb;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  return same_output_path(a, b);
}

}  // namespace mirrorlab::core
