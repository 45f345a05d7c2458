#include "app/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace mirrorlab::app {

std::string check_output_file(std::string_view flag, const std::string& path) {
  if (path.empty()) return "";
  namespace fs = std::filesystem;
  const std::string named = std::string(flag) + " " + path;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    return named + ": that is a folder; give a file name, e.g. " +
           (fs::path(path) / "out").string();
  }
  const fs::path parent = fs::path(path).parent_path();
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(folder, error)) {
    return named + ": the folder " + folder.string() +
           " does not exist; create it (mkdir -p) or write somewhere else";
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return named + ": the folder " + folder.string() + " is not writable; write somewhere else";
  }
  return "";
}

}  // namespace mirrorlab::app
