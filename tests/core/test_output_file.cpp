// core::OutputFile: every output file is written whole or not at all, never over a link or a
// device, and a failure keeps the old file and leaves no temporary file behind.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/output_file.h"
#include "tests/support/temp_folder.h"

namespace mirrorlab::core {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Everything in the folder but `keep`: temporary files left behind.
  std::vector<std::string> leftovers(std::initializer_list<std::string> keep) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) found.push_back(name);
    }
    return found;
  }
  std::string error_of(const fs::path& path) {
    try {
      OutputFile::create(path);
    } catch (const OutputFileError& e) {
      return e.what();
    }
    return "";
  }

  mirrorlab::testing::TempFolder folder_{"output-file"};
  const fs::path& dir_ = folder_.path();
};

TEST_F(OutputFileTest, WritesTheWholeFileOnCommitAndNothingBefore) {
  const fs::path path = dir_ / "history.json";
  { std::ofstream(path) << "old"; }
  OutputFile file = OutputFile::create(path);
  file.write("new ");
  file.write("text");
  EXPECT_EQ(read(path), "old") << "the old file stays until commit";
  EXPECT_EQ(leftovers({"history.json"}).size(), 1u) << "the temporary sits beside it";
  file.commit();
  EXPECT_EQ(read(path), "new text");
  EXPECT_TRUE(leftovers({"history.json"}).empty());
}

TEST_F(OutputFileTest, AbandonedOrDestroyedBeforeCommitKeepsTheOldFileAndLeavesNothing) {
  const fs::path path = dir_ / "trace.json";
  { std::ofstream(path) << "good trace"; }
  {
    OutputFile file = OutputFile::create(path);
    file.write("half a tr");
  }  // an exception unwinding past it, for example
  EXPECT_EQ(read(path), "good trace");
  OutputFile again = OutputFile::create(path);
  again.write("x");
  again.abandon();
  again.abandon();  // idempotent
  EXPECT_EQ(read(path), "good trace");
  EXPECT_TRUE(leftovers({"trace.json"}).empty());
  EXPECT_THROW(again.write("y"), OutputFileError);
}

TEST_F(OutputFileTest, RefusesLinksDevicesPipesFoldersAndMissingFolders) {
  const fs::path target = dir_ / "real.json";
  { std::ofstream(target) << "real"; }
  fs::create_symlink(target, dir_ / "link.json");
  const std::string link = error_of(dir_ / "link.json");
  EXPECT_NE(link.find("is a symbolic link to " + target.string()), std::string::npos) << link;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(read(target), "real");

  EXPECT_NE(error_of("/dev/null").find("is a character device"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  EXPECT_NE(error_of(dir_ / "pipe").find("is a pipe"), std::string::npos);
  EXPECT_NE(error_of(dir_).find("is a folder"), std::string::npos);
  EXPECT_NE(error_of(dir_ / "no-such-folder" / "x.json").find("does not exist"), std::string::npos);
  EXPECT_NE(error_of("").find("no file name"), std::string::npos);
  if (::geteuid() != 0) {  // root may write anywhere
    ASSERT_EQ(::chmod(dir_.c_str(), 0500), 0);
    EXPECT_NE(error_of(dir_ / "x.json").find("Permission denied"), std::string::npos);
    ::chmod(dir_.c_str(), 0700);
  }
  // /proc takes no new files: found when the file is created, at the start of a run.
  EXPECT_NE(error_of("/proc/mirrorlab-history.json").find("cannot create a file in /proc"),
            std::string::npos);
}

// A full disk, simulated by a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored, in a child
// process): the write fails with the system's reason, the old file is kept, no temporary stays.
TEST_F(OutputFileTest, AFullDiskKeepsTheOldFileAndSaysWhy) {
  const fs::path path = dir_ / "trace.json";
  { std::ofstream(path) << "the previous good trace"; }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      OutputFile file = OutputFile::create(path);
      file.write(std::string(3000, 'a'));
      file.write(std::string(3000, 'b'));  // past 4096 bytes
      file.commit();
      _exit(3);
    } catch (const OutputFileError& e) {
      const std::string what = e.what();
      _exit(what.find("File too large") != std::string::npos &&
                    what.find(path.string()) != std::string::npos
                ? 0
                : 4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: written past the limit; 4: the message";
  EXPECT_EQ(read(path), "the previous good trace");
  EXPECT_TRUE(leftovers({"trace.json"}).empty());
}

TEST_F(OutputFileTest, TheSignalSafeCleanupRemovesEveryOpenTemporary) {
  OutputFile a = OutputFile::create(dir_ / "a.json");
  OutputFile b = OutputFile::create(dir_ / "b.json");
  OutputFile c = OutputFile::create(dir_ / "c.json");
  c.write("done");
  c.commit();
  EXPECT_EQ(leftovers({"c.json"}).size(), 2u);
  remove_temporary_files_signal_safe();
  EXPECT_TRUE(leftovers({"c.json"}).empty());
  EXPECT_EQ(read(dir_ / "c.json"), "done");
}

TEST_F(OutputFileTest, SamePathThroughDotsAndLinkedFolders) {
  fs::create_directories(dir_ / "sub");
  fs::create_directory_symlink(dir_ / "sub", dir_ / "alias");
  EXPECT_TRUE(same_output_path(dir_ / "a.json", dir_ / "sub" / ".." / "a.json"));
  EXPECT_TRUE(same_output_path(dir_ / "sub" / "a.json", dir_ / "alias" / "a.json"));
  EXPECT_FALSE(same_output_path(dir_ / "a.json", dir_ / "b.json"));
  // Files not there yet, named from the folder the command runs in (--history ./new.json
  // --trace new.json wrote the trace over the history).
  const fs::path was = fs::current_path();
  fs::current_path(dir_);
  EXPECT_TRUE(same_output_path("new.json", "./new.json"));
  EXPECT_TRUE(same_output_path("new.json", dir_ / "new.json"));
  EXPECT_TRUE(same_output_path("sub/new.json", "alias/new.json"));
  EXPECT_FALSE(same_output_path("new.json", "sub/new.json"));
  fs::current_path(was);
}

TEST_F(OutputFileTest, SameFileThroughLinksOfEitherKind) {
  write_file_whole(dir_ / "a.json", "a");
  write_file_whole(dir_ / "b.json", "b");
  fs::create_symlink(dir_ / "a.json", dir_ / "soft.json");
  fs::create_hard_link(dir_ / "a.json", dir_ / "hard.json");
  EXPECT_TRUE(same_file(dir_ / "a.json", dir_ / "soft.json"));
  EXPECT_TRUE(same_file(dir_ / "hard.json", dir_ / "soft.json"));
  EXPECT_FALSE(same_file(dir_ / "a.json", dir_ / "b.json"));
  EXPECT_TRUE(same_file(dir_ / "new.json", dir_ / "." / "new.json"));  // neither exists yet
}

TEST_F(OutputFileTest, AReplacedFileKeepsItsModeAndANewOneTakesTheUmasks) {
  const fs::path secret = dir_ / "secret.json";
  write_file_whole(secret, "old");
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);  // 0600
  write_file_whole(secret, "new");
  EXPECT_EQ(read(secret), "new");
  EXPECT_EQ(fs::status(secret).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const mode_t mask = ::umask(022);
  ::umask(mask);
  write_file_whole(dir_ / "fresh.json", "x");
  EXPECT_EQ(static_cast<mode_t>(fs::status(dir_ / "fresh.json").permissions() & fs::perms::all),
            0666 & ~mask);
}

// A file no one may write (0444, kept on purpose) is not replaced, by root either: access()
// would let root write it, and the folder would let a rename replace it.
TEST_F(OutputFileTest, AReadOnlyFileIsNotReplacedWhoeverAsks) {
  const fs::path kept = dir_ / "result.json";
  write_file_whole(kept, "keep me");
  fs::permissions(kept, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  try {
    write_file_whole(kept, "replaced");
    ADD_FAILURE() << "a read-only file was replaced";
  } catch (const OutputFileError& e) {
    EXPECT_NE(std::string(e.what()).find("is read-only (mode 0444), and mirrorlab does not "
                                         "replace such a file: make it writable (chmod u+w)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(kept), "keep me");
  EXPECT_EQ(leftovers({"result.json"}).size(), 0u);
}

// A file the user may not write is not replaced, though the folder would let a rename do it.
// Checked as an unprivileged user: root may write any file. Run as root, the check runs in a
// child process that becomes "nobody" (uid 65534) in a folder it may write.
TEST_F(OutputFileTest, AFileTheUserMayNotWriteIsNotReplaced) {
  const fs::path open_folder = dir_ / "shared";
  fs::create_directories(open_folder);
  fs::permissions(open_folder, fs::perms::all);  // 0777: nobody may make its temporary there
  fs::permissions(dir_, fs::perms::all);
  const fs::path kept = open_folder / "result.json";
  write_file_whole(kept, "keep me");
  // 0420: writable by the group only, so no read-only file: refused because the user (the
  // owner, or nobody, in no group of it) may not write it.
  fs::permissions(kept, fs::perms::owner_read | fs::perms::group_write);
  const auto try_to_replace = [&]() -> int {
    try {
      write_file_whole(kept, "replaced");
    } catch (const OutputFileError& e) {
      const std::string what = e.what();
      return what.find("is not writable for you (mode 0420)") != std::string::npos ? 0 : 2;
    }
    return 1;
  };
  if (::geteuid() != 0) {
    EXPECT_EQ(try_to_replace(), 0);
  } else {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(77);
      ::_exit(try_to_replace());
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot become an unprivileged user here";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: replaced; 2: refused with other words";
  }
  EXPECT_EQ(read(kept), "keep me");
  EXPECT_EQ(leftovers({"shared"}).size(), 0u);
  for (const auto& entry : fs::directory_iterator(open_folder)) {
    EXPECT_EQ(entry.path().filename(), "result.json") << "a temporary file was left";
  }
}

}  // namespace
}  // namespace mirrorlab::core
