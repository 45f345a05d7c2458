// Runs a shell command as a user would and keeps its exit status and output (stdout and
// stderr together), for the tests of the mirrorlab command.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/posix_regex.h"

namespace mirrorlab::testing {

struct CommandOutput {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string output;  // stdout and stderr together
};

// What a command under mpirun needs in its environment in this build, as "NAME='value' ", or "":
// in the ASan build (LSAN_OPTIONS set by ctest), LSan's full unwinder, without which the memory
// Open MPI never frees cannot be told from ours (cmake/MirrorlabSanitizers.cmake says why).
inline std::string mpirun_sanitizer_environment() {
  const char* lsan = std::getenv("LSAN_OPTIONS");
  if (lsan == nullptr || *lsan == '\0') return "";
  return std::string("LSAN_OPTIONS='") + lsan + ":fast_unwind_on_malloc=0' ";
}

// What every test's command under mpirun has in its environment: Open MPI as root (CI is root),
// the sanitizer's needs, and hwloc without its GL component, which connects to every X display
// :0, :1, ... as each rank starts (to find GPUs through NV-CONTROL): a test's virtual display
// (scripts/headless) ending meanwhile would end that rank ("X connection to :0 broken", seen in
// python.test_multi_worker beside GUI tests). As "NAME=value ... ", for `env`.
inline std::string mpirun_test_environment() {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-gl " +
         mpirun_sanitizer_environment();
}

inline CommandOutput run_command(const std::string& command) {
  CommandOutput result;
  // As CI runs it: into a pipe, 80 columns wide (app/output/terminal_width.h), whatever COLUMNS
  // the shell that runs the tests exports; a command may set its own (env COLUMNS=50 ...).
  FILE* pipe = popen(("export COLUMNS=80; " + command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) result.output += buffer;
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

// `text` with each line break and the spaces around it as one space: a command's help, whose
// descriptions wrap at 80 columns, read as the sentences it says.
inline std::string unwrapped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
    out += ' ';
  }
  return out;
}

// Whether `train`'s output shows an epoch begun or ended: "Epoch 2/5", or the line that ends an
// epoch ("24/24 ━━━━ 1s 35ms/step - ..."; a fit of one epoch prints no "Epoch 1/1", as Keras).
inline bool started_training(const std::string& output) {
  return output.find("Epoch ") != std::string::npos || output.find("/step - ") != std::string::npos;
}

#ifdef MIRRORLAB_BINARY_DIR
// This build's mirrorlab command with `args` ("train --gpus 2").
inline CommandOutput run_mirrorlab(const std::string& args) {
  return run_command(std::string(MIRRORLAB_BINARY_DIR) + "/app/mirrorlab " + args);
}

// True when `mirrorlab devices` lists a physical GPU (CUDA built, and a GPU visible).
inline bool mirrorlab_sees_a_gpu() {
  return run_mirrorlab("devices").output.find("PhysicalDevice(name='/physical_device:GPU:0'") !=
         std::string::npos;
}
#endif

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `program args` in the background through sh, stdout and stderr into `log`: for a test that
// signals the run (Ctrl-C) while it goes.
inline pid_t start_command(const std::string& program, const std::string& args,
                           const std::filesystem::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string command = "exec " + program + " " + args;
    ::setenv("COLUMNS", "80", 1);  // as run_command: 80 columns, whatever the shell exports
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Whether `log` holds `text` within `seconds`.
inline bool wait_for_text(const std::filesystem::path& log, const std::string& text,
                          double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (read_file(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The exit status, or -1 (and the process killed) when it has not exited in `seconds`.
inline int wait_exit(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

// Worker 1's pid, from its "Worker 1 of 2, pid N on" line in `text`; "" when no such line.
inline std::string worker_1_pid(const std::string& text) {
  const std::vector<std::string> line = regex_search_groups(text, "Worker 1 of 2, pid ([0-9]+) on");
  return line.empty() ? std::string() : line[1];
}

// Kills worker 1 of the run `run` started by start_command (its pid from its "Worker 1 of 2, pid
// N on" line in `log`); the run must then end within 10 s, not 0, its output naming worker 1 as
// gone (virtualgpu/workers/worker_watch.h).
inline void expect_worker_1_killed_said(pid_t run, const std::filesystem::path& log) {
  const std::string text = read_file(log);
  const std::string pid = worker_1_pid(text);
  ASSERT_FALSE(pid.empty()) << text;
  ASSERT_EQ(kill(std::stoi(pid), SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  const int status = wait_exit(run, 20);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const std::string output = read_file(log);
  EXPECT_NE(status, 0) << output;
  EXPECT_NE(status, -1) << "still running 20 s after worker 1 was killed:\n" << output;
  EXPECT_LT(seconds, 10.0) << output;
  EXPECT_NE(output.find("worker 1 (pid " + pid + " on"), std::string::npos) << output;
  EXPECT_NE(output.find("is gone"), std::string::npos) << output;
}

inline bool has_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist");
}

}  // namespace mirrorlab::testing
