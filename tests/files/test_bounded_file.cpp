// The ground floor of every reader (files/bounded_file.h): a regular file read whole under a
// cap; a folder, a device, a pipe, a missing file and one past the cap each refused with a
// sentence, and none of them read forever or past the cap.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "files/bounded_file.h"
#include "tests/support/hang_guard.h"
#include "tests/support/temp_folder.h"

namespace {

using mirrorlab::files::InputFileError;
using mirrorlab::files::read_bounded_file;
namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
}

// The problem read_bounded_file gives for `file`, or "read" when it read it.
std::string problem(const fs::path& file, std::uintmax_t cap = 100) {
  try {
    read_bounded_file(file, cap, "a test file is small");
    return "read";
  } catch (const InputFileError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(std::string(e.what()), file.string() + ": " + e.problem());
    return e.problem();
  }
}

TEST(BoundedFile, ReadsARegularFileWholeUpToItsCap) {
  mirrorlab::testing::TempFolder dir("bounded");
  const std::string bytes("ab\0cd\n", 6);  // a NUL inside: read as bytes, not text
  write(dir.path() / "f", bytes);
  EXPECT_EQ(read_bounded_file(dir.path() / "f", 6, ""), bytes);
  write(dir.path() / "empty", "");
  EXPECT_EQ(read_bounded_file(dir.path() / "empty", 0, ""), "");
  const std::string big(200000, 'x');  // more than one read's buffer
  write(dir.path() / "big", big);
  EXPECT_EQ(read_bounded_file(dir.path() / "big", big.size(), ""), big);
  fs::create_symlink(dir.path() / "f", dir.path() / "link");
  EXPECT_EQ(read_bounded_file(dir.path() / "link", 6, ""), bytes);
}

TEST(BoundedFile, RefusesWhatIsNotARegularFileOrTooLarge) {
  mirrorlab::testing::TempFolder dir("bounded");
  write(dir.path() / "seven", "1234567");
  EXPECT_EQ(problem(dir.path() / "seven", 6),
            "is 7 bytes, more than the 6 read at most: a test file is small");
  EXPECT_EQ(problem(dir.path()), "is not a regular file but a folder");
  EXPECT_EQ(problem("/dev/zero"), "is not a regular file but a pipe, a socket or a device");
  EXPECT_EQ(problem(dir.path() / "none"),
            "cannot be read: No such file or directory (is the path right?)");
  fs::create_symlink(dir.path() / "none", dir.path() / "dangling");
  EXPECT_EQ(problem(dir.path() / "dangling"),
            "cannot be read: No such file or directory (is the path right?)");
  try {
    read_bounded_file(dir.path() / "none", 1, "");
  } catch (const InputFileError& e) {
    EXPECT_TRUE(e.missing());
  }
  // A FIFO with no writer: refused at once, not waited on.
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  mirrorlab::testing::within_seconds(10, "a FIFO", [&] {
    EXPECT_EQ(problem(dir.path() / "fifo"),
              "is not a regular file but a pipe, a socket or a device");
  });
  // A file the user may not read (root reads everything: nothing to see there).
  write(dir.path() / "private", "x");
  fs::permissions(dir.path() / "private", fs::perms::none);
  if (::geteuid() != 0) {
    EXPECT_EQ(problem(dir.path() / "private"), "cannot be read: Permission denied");
  }
}

}  // namespace
