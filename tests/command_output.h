// Runs a shell command as a user would and keeps its exit status and output (stdout and
// stderr together), for the tests of the mirrorlab command.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace mirrorlab::testing {

struct CommandOutput {
  int status = -1;     // exit status, or -1 if it did not exit normally
  std::string output;  // stdout and stderr together
};

inline CommandOutput run_command(const std::string& command) {
  CommandOutput result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) result.output += buffer;
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
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

inline bool has_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist");
}

}  // namespace mirrorlab::testing
