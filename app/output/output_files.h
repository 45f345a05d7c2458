// The files a command writes (--history, --trace, --screenshot, --report, ...), each created at
// the start of the run as core::OutputFile's temporary, so that a path that cannot be written
// is said before a long run and not after it, and two flags naming one file are refused. The
// files are written whole at the end, or, when the run stops early (Ctrl-C, diverged), with
// what the run has.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/io/output_file.h"

namespace mirrorlab::app {

class OutputFiles {
 public:
  // A file the command reads (given to `flag`): no output may be that file, whatever path names
  // it (a link, another spelling). Call before add().
  void add_input(const std::string& flag, const std::string& path);
  // What a flag writes, for the files of mirrorlab's it may replace: a checkpoint's file none
  // does; a recording of `compare --record` only --record does.
  enum class Writes { kOther, kRecording };
  // "" when `path` (given to `flag`) can be written, no earlier flag names the same file, it is
  // none of the inputs and no file of mirrorlab's of another kind (a checkpoint's, a recording);
  // else a sentence naming the flag, the path and what to do. An empty path (the flag not given)
  // is fine. `hold`: keep the file open until take() (else only checked).
  std::string add(const std::string& flag, const std::string& path, bool hold = true,
                  Writes writes = Writes::kOther);
  // The file held for `flag`, or nullptr when the flag was not given.
  core::OutputFile* find(const std::string& flag);

 private:
  std::map<std::string, std::string> paths_;   // flag -> path, in the order checked
  std::map<std::string, std::string> inputs_;  // flag -> path of a file read
  std::map<std::string, core::OutputFile> held_;
};

// Writes `text` to the file held for `flag` and commits it; "" or what went wrong (the old file
// is then kept). Nothing when the flag was not given.
std::string write_output(OutputFiles& files, const std::string& flag, const std::string& text);

// After everything a command printed: stdout flushed, and a failed write to it (a full disk,
// a closed pipe) reported on stderr. Returns `status`, or 1 when stdout could not be written.
int finish_stdout(int status);

}  // namespace mirrorlab::app
