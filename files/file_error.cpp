#include "files/file_error.h"

#include <utility>

namespace mirrorlab::files {
namespace {

std::string located(const std::string& file, int line, const std::string& problem) {
  std::string out = file;
  if (line > 0) out.append(":").append(std::to_string(line));
  return out.append(": ").append(problem);
}

}  // namespace

FileError::FileError(std::string file, int line, std::string problem)
    : std::runtime_error(located(file, line, problem)),
      file_(std::move(file)),
      line_(line),
      problem_(std::move(problem)) {}

}  // namespace mirrorlab::files
