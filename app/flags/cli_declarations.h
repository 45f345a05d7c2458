// CLI11's classes as the commands' headers name them, declared without CLI/CLI.hpp: including
// that costs a source 5 s to compile here (16 s with ASan and UBSan, as CLI11 2.1 defines its
// validators as objects in every source that includes it). So the headers declare, and only the
// sources that add flags or parse a command line include CLI11.
#pragma once

namespace CLI {
class App;
class Option;
class Error;
class ParseError;
}  // namespace CLI
