// The error of every reader of a user's file: which file, which line (0: the file as a whole)
// and what is wrong, as "lessons/01.md:42: [[check]] needs `that`". The readers' own errors
// (a lesson's, a topology's, a recording's, a file that cannot be read at all) are kinds of it.
#pragma once

#include <stdexcept>
#include <string>

namespace mirrorlab::files {

class FileError : public std::runtime_error {
 public:
  FileError(std::string file, int line, std::string problem);
  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when the problem is the whole file
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  int line_ = 0;
  std::string problem_;
};

}  // namespace mirrorlab::files
