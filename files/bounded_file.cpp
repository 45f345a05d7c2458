#include "files/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace mirrorlab::files {
namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

// Closes the descriptor on every path out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_bounded_file(const std::filesystem::path& file, std::uintmax_t max_bytes,
                              const std::string& what_it_holds) {
  // Opened without blocking (a FIFO with no writer would wait forever), then asked what it is:
  // what is read is what was checked, even if the path changes in between.
  Descriptor d;
  d.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (d.fd < 0) {
    const int error = errno;
    throw InputFileError(
        file,
        "cannot be read: " + errno_text(error) + (error == ENOENT ? " (is the path right?)" : ""),
        error == ENOENT);
  }
  struct stat info {};
  if (::fstat(d.fd, &info) != 0) throw InputFileError(file, "cannot be read: " + errno_text(errno));
  if (S_ISDIR(info.st_mode)) throw InputFileError(file, "is not a regular file but a folder");
  if (!S_ISREG(info.st_mode)) {
    throw InputFileError(file, "is not a regular file but a pipe, a socket or a device");
  }
  const auto too_large = [&](std::uintmax_t size) {
    return InputFileError(file, "is " + std::to_string(size) + " bytes, more than the " +
                                    std::to_string(max_bytes) + " read at most: " + what_it_holds);
  };
  if (static_cast<std::uintmax_t>(info.st_size) > max_bytes) {
    throw too_large(static_cast<std::uintmax_t>(info.st_size));
  }
  // Read to the end, never past the cap (a file that grows while it is read is refused too).
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(d.fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputFileError(file, "could not be read to its end: " + errno_text(errno));
    }
    if (got == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(got));
    if (bytes.size() > max_bytes) throw too_large(bytes.size());
  }
  return bytes;
}

}  // namespace mirrorlab::files
