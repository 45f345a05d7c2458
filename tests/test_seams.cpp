// The seams between the layers, checked on the sources themselves:
// - the layers below the command line (core/, virtualgpu/) name no command-line flag: they state
//   facts in typed errors, and app/ (flags), gui/ (settings) and the lessons give the advice;
// - each all-reduce algorithm's name is written once outside tests and docs (in the table), and
//   everything else reads it from there.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "app/command_line.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = MIRRORLAB_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh";
}

std::vector<fs::path> sources_under(const std::vector<std::string>& folders) {
  std::vector<fs::path> files;
  for (const std::string& folder : folders) {
    if (!fs::exists(kSource / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(kSource / folder)) {
      if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
    }
  }
  return files;
}

// Every long flag of every command ("--memory-limit"), from the command line itself.
std::set<std::string> every_flag() {
  mirrorlab::app::CommandLine command_line;
  std::set<std::string> flags;
  std::vector<CLI::App*> commands{&command_line.app()};
  while (!commands.empty()) {
    CLI::App* command = commands.back();
    commands.pop_back();
    for (const CLI::Option* option : command->get_options()) {
      for (const std::string& name : option->get_lnames()) flags.insert("--" + name);
    }
    for (CLI::App* sub : command->get_subcommands({})) commands.push_back(sub);
  }
  return flags;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// 1-based line numbers where `token` stands on its own (not inside a longer name, not a
// decrement like --steps_requested_).
std::vector<int> lines_naming(const std::string& text, const std::string& token) {
  std::vector<int> lines;
  for (std::size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + 1)) {
    const char before = at == 0 ? ' ' : text[at - 1];
    const std::size_t end = at + token.size();
    const char after = end < text.size() ? text[end] : ' ';
    if (name_char(before) || before == '-' || name_char(after) || after == '-') continue;
    lines.push_back(1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n')));
  }
  return lines;
}

TEST(Seams, NoCommandLineFlagIsNamedBelowTheApp) {
  const std::set<std::string> flags = every_flag();
  ASSERT_GT(flags.size(), 30u);
  ASSERT_TRUE(flags.count("--memory-limit") && flags.count("--allreduce"));
  const std::vector<fs::path> files = sources_under({"core", "timing", "virtualgpu"});
  ASSERT_GT(files.size(), 50u);
  for (const fs::path& file : files) {
    const std::string text = read(file);
    for (const std::string& flag : flags) {
      for (const int line : lines_naming(text, flag)) {
        ADD_FAILURE() << fs::relative(file, kSource).string() << ":" << line << " names " << flag
                      << ": say the facts there (a typed error), and the advice in "
                      << "app/advice.cpp and gui/model/advice.cpp";
      }
    }
  }
}

// The layers, lowest first, and what each may include (itself and what it is built on). A folder
// is a library (its CMakeLists.txt) or, inside virtualgpu/ and gui/, a part of one: an include
// against this table is a dependency the build may not even link, or a part that runs back up.
const std::map<std::string, std::vector<std::string>>& layers() {
  static const std::map<std::string, std::vector<std::string>> below = {
      {"files", {}},          // the ground floor: a user's file read whole, under a cap
      {"timing", {"files"}},  // pure functions: the timing model
      {"virtualgpu/memory", {}},
      {"virtualgpu/cuda", {"virtualgpu/memory"}},
      // mirrorlab_virtualgpu, one library in four folders, each built on the ones before it
      {"virtualgpu/devices", {"virtualgpu/memory", "virtualgpu/cuda", "timing"}},
      {"virtualgpu/collectives", {"virtualgpu/devices"}},
      {"virtualgpu/workers", {"virtualgpu/collectives"}},
      {"virtualgpu/measure", {"virtualgpu/collectives"}},
      {"virtualgpu", {"virtualgpu/workers", "virtualgpu/measure"}},  // the library as a whole
      // the workers as MPI ranks: only the faces make them (app/, and python/ for
      // MultiWorkerMirroredStrategy)
      {"virtualgpu/mpi", {"virtualgpu"}},
      {"core/io", {"files"}},
      {"core/nn", {"core/io", "virtualgpu/memory", "virtualgpu/cuda"}},
      {"core/strategy", {"core/nn", "virtualgpu"}},
      {"core/settings", {"core/strategy"}},
      {"core/checkpoint", {"core/settings"}},
      {"core/session", {"core/strategy", "core/checkpoint"}},
      {"lessons", {"core/session"}},
      // the Lesson panel plays what `lesson run` plays; one library in four folders
      {"gui/drawing", {"lessons", "core/session"}},
      {"gui/model", {"gui/drawing"}},
      {"gui/panels", {"gui/model"}},
      {"gui/window", {"gui/panels"}},
      {"gui", {"gui/window"}},
      // mirrorlab_app, in four folders and the commands above them
      {"app/output", {"lessons", "core/session"}},
      {"app/flags", {"app/output"}},
      {"app/train", {"app/flags", "virtualgpu/mpi"}},
      {"app/compare", {"app/flags"}},
      {"app", {"app/train", "app/compare", "gui"}},
      // the Python module's C++ half: a face beside app/, over the same core
      {"python/bindings", {"core/session", "virtualgpu/mpi", "gui"}},
  };
  return below;
}

// `layer` and everything it is built on.
std::set<std::string> reachable(const std::string& layer) {
  std::set<std::string> seen{layer};
  std::vector<std::string> todo{layer};
  while (!todo.empty()) {
    const std::string next = todo.back();
    todo.pop_back();
    for (const std::string& below : layers().at(next)) {
      if (seen.insert(below).second) todo.push_back(below);
    }
  }
  return seen;
}

// The layer a path in the tree belongs to ("core/nn/model.h" -> "core/nn"), or "".
std::string layer_of(const std::string& path) {
  std::string best;
  for (const auto& [layer, _] : layers()) {
    if (path.rfind(layer + "/", 0) == 0 && layer.size() > best.size()) best = layer;
  }
  return best;
}

// Calls `f(line, included, layer)` for each `#include "..."` of `file` that names a layer of the
// table (tests/support/ and third-party headers are none).
void for_each_layer_include(
    const fs::path& file,
    const std::function<void(int, const std::string&, const std::string&)>& f) {
  std::istringstream text(read(file));
  int line = 0;
  for (std::string l; std::getline(text, l);) {
    ++line;
    if (l.rfind("#include \"", 0) != 0) continue;
    const std::string included = l.substr(10, l.find('"', 10) - 10);
    const std::string to = layer_of(included);
    if (!to.empty()) f(line, included, to);
  }
}

TEST(Seams, EachFolderIncludesOnlyTheLayersBelowIt) {
  std::vector<std::string> folders;
  for (const auto& [layer, _] : layers()) folders.push_back(layer);
  int includes = 0;
  for (const fs::path& file : sources_under(
           {"app", "core", "files", "gui", "lessons", "python", "timing", "virtualgpu"})) {
    const std::string path = fs::relative(file, kSource).string();
    const std::string layer = layer_of(path);
    ASSERT_FALSE(layer.empty()) << path << " is in no layer of the table";
    const std::set<std::string> allowed = reachable(layer);
    for_each_layer_include(file, [&](int line, const std::string& included, const std::string& to) {
      ++includes;
      EXPECT_TRUE(allowed.count(to)) << path << ":" << line << " (" << layer << ") includes "
                                     << included << " (" << to << "), which is not below it";
    });
  }
  EXPECT_GT(includes, 300);
}

// The tests stand in a folder per layer: each tests its layer, with what that is built on, and
// includes nothing above it (a test of core/ that needs the window is a test of gui/).
TEST(Seams, EachTestFolderIncludesOnlyItsLayerAndBelow) {
  const std::map<std::string, std::vector<std::string>> tested = {
      {"tests/files", {"files"}},
      {"tests/timing", {"timing"}},
      {"tests/virtualgpu", {"virtualgpu", "virtualgpu/mpi"}},
      {"tests/core", {"core/session", "virtualgpu/mpi"}},
      {"tests/lessons", {"lessons"}},
      {"tests/gui", {"gui"}},
      {"tests/app", {"app"}},
  };
  int includes = 0;
  for (const auto& [folder, tops] : tested) {
    std::set<std::string> allowed;
    for (const std::string& top : tops) allowed.merge(reachable(top));
    const std::vector<fs::path> files = sources_under({folder});
    EXPECT_FALSE(files.empty()) << folder << " holds no test";
    for (const fs::path& file : files) {
      const std::string path = fs::relative(file, kSource).string();
      for_each_layer_include(
          file, [&](int line, const std::string& included, const std::string& to) {
            ++includes;
            EXPECT_TRUE(allowed.count(to)) << path << ":" << line << " includes " << included
                                           << " (" << to << "), above what " << folder << " tests";
          });
    }
  }
  EXPECT_GT(includes, 150);
  // Only the folders' own files and what every folder shares stand beside them.
  for (const auto& entry : fs::directory_iterator(kSource / "tests")) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory()) {
      // python/: the module's tests are Python (tests/python/CMakeLists.txt).
      EXPECT_TRUE(tested.count("tests/" + name) || name == "support" || name == "tensorflow" ||
                  name == "python")
          << "tests/" << name << " is in no layer: add it to this table";
    } else if (name.rfind("test_", 0) == 0) {
      EXPECT_EQ(name, "test_seams.cpp") << "tests/" << name << ": move it into its layer's folder";
    }
  }
}

// A room: a source and its header, by their path without the extension ("core/nn/model").
std::string room_of(const std::string& path) { return path.substr(0, path.rfind('.')); }

// Inside every folder too, includes point one way: no room includes, directly or through
// others, a room that includes it (the algorithms' headers including the table that makes them;
// a transport building its own subclass). Such a loop is an include that runs back up.
TEST(Seams, NoRoomIncludesARoomThatIncludesIt) {
  std::map<std::string, std::set<std::string>> includes;  // room -> rooms it includes
  std::set<std::string> rooms;
  const std::vector<std::string> all = {"app",    "core",       "files", "gui",   "lessons",
                                        "timing", "virtualgpu", "tests", "bench", "fuzz"};
  for (const fs::path& file : sources_under(all))
    rooms.insert(room_of(fs::relative(file, kSource).string()));
  for (const fs::path& file : sources_under(all)) {
    const std::string room = room_of(fs::relative(file, kSource).string());
    std::istringstream text(read(file));
    for (std::string l; std::getline(text, l);) {
      if (l.rfind("#include \"", 0) != 0) continue;
      const std::string to = room_of(l.substr(10, l.find('"', 10) - 10));
      if (to != room && rooms.count(to)) includes[room].insert(to);
    }
  }
  // Depth-first, with the path so far: a room met again on it closes a loop.
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<std::string> path;
  std::set<std::string> loops;
  std::function<void(const std::string&)> visit = [&](const std::string& room) {
    state[room] = 1;
    path.push_back(room);
    for (const std::string& next : includes[room]) {
      if (state[next] == 1) {
        std::string loop;
        for (auto at = std::find(path.begin(), path.end(), next); at != path.end(); ++at) {
          loop += *at + " -> ";
        }
        loops.insert(loop + next);
      } else if (state[next] == 0) {
        visit(next);
      }
    }
    path.pop_back();
    state[room] = 2;
  };
  for (const std::string& room : rooms) {
    if (state[room] == 0) visit(room);
  }
  EXPECT_GT(rooms.size(), 250u);  // the walk found the tree
  for (const std::string& loop : loops) {
    ADD_FAILURE() << "an include runs back up: " << loop
                  << " (move what both need into a room below both)";
  }
}

// Whether text[at] is the '#' of an #include directive.
bool is_include(const std::string& text, std::size_t at) {
  std::size_t word = text.find_first_not_of(" \t", at + 1);
  return word != std::string::npos && text.compare(word, 7, "include") == 0;
}

// The string literals of a C++ source (comments and #include's header names skipped; escapes
// kept as written).
std::vector<std::pair<std::string, int>> string_literals(const std::string& text) {
  std::vector<std::pair<std::string, int>> literals;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if ((c == '/' && i + 1 < text.size() && text[i + 1] == '/') ||
        (c == '#' && is_include(text, i))) {
      while (i < text.size() && text[i] != '\n') ++i;
      ++line;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      for (i += 2; i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/'); ++i) {
        if (text[i] == '\n') ++line;
      }
      ++i;
    } else if (c == '\'') {
      for (++i; i < text.size() && text[i] != '\''; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == 'R' && i + 1 < text.size() && text[i + 1] == '"') {
      const std::size_t open = text.find('(', i + 2);
      const std::string close = ")" + text.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = text.find(close, open);
      literals.emplace_back(text.substr(open + 1, end - open - 1), line);
      line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(i),
                                          text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      i = end + close.size() - 1;
    } else if (c == '"') {
      std::string literal;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') literal += text[i++];
        literal += text[i];
      }
      literals.emplace_back(literal, line);
    }
  }
  return literals;
}

TEST(Seams, StringLiteralsAreFoundAsTheCompilerSeesThem) {
  const auto found = string_literals(
      "#include \"not/this.h\"\n// \"not this\"\nconst char* a = \"one\"; /* \"nor\n this\" */ "
      "char q = '\"';\n"
      "auto b = R\"x(raw \"two\")x\"; auto c = \"esc \\\"three\\\"\";");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].first, "one");
  EXPECT_EQ(found[0].second, 3);
  EXPECT_EQ(found[1].first, "raw \"two\"");
  EXPECT_EQ(found[1].second, 5);
  EXPECT_EQ(found[2].first, "esc \\\"three\\\"");
}

TEST(Seams, EachAllReduceAlgorithmNameIsWrittenOnceOutsideTestsAndDocs) {
  const std::vector<std::string> names = {"reduce-to-one", "ring", "one-shot", "nccl"};
  std::map<std::string, std::vector<std::string>> places;
  for (const fs::path& file :
       sources_under({"app", "bench", "core", "gui", "lessons", "timing", "virtualgpu"})) {
    for (const auto& [literal, line] : string_literals(read(file))) {
      for (const std::string& name : names) {
        // NCCL's header and library are files, not the algorithm's name.
        std::string text = literal;
        for (const std::string file_name : {"nccl.h", "libnccl"}) {
          for (std::size_t at = text.find(file_name); at != std::string::npos;
               at = text.find(file_name)) {
            text.replace(at, file_name.size(), "");
          }
        }
        if (!lines_naming(text, name).empty()) {
          places[name].push_back(fs::relative(file, kSource).string() + ":" + std::to_string(line) +
                                 ": \"" + literal + "\"");
        }
      }
    }
  }
  for (const std::string& name : names) {
    std::string where;
    for (const std::string& place : places[name]) where += "\n  " + place;
    EXPECT_EQ(places[name].size(), 1u)
        << "'" << name << "' is written in " << places[name].size()
        << " string literals; write it once, in the table of algorithms, and read it from there:"
        << where;
  }
}

}  // namespace
