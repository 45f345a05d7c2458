// Files the commands write at the end of a run (--history, --trace, --screenshot, --report) are
// checked before the run starts, so a long training never ends with "cannot open for writing".
#pragma once

#include <string>
#include <string_view>

namespace mirrorlab::app {

// "" when `path` can be written (its folder exists and is writable, and it is not a folder);
// otherwise a sentence naming the flag, the path, what is wrong and what to do. An empty path
// (the flag not given) is fine.
std::string check_output_file(std::string_view flag, const std::string& path);

}  // namespace mirrorlab::app
