// A plain main for a fuzz target, built by any compiler: feeds the target's entry point
// (LLVMFuzzerTestOneInput, the same file libFuzzer drives) every file given, or every file of
// every folder given, in name order. The normal build replays the seed corpus and every input
// the fuzzer ever crashed on (fuzz/corpus/<target>, fuzz/crashes/<target>) this way, so a
// finding once fixed stays fixed, in every build, with or without clang and sanitizers.
//   fuzz_replay_<target> FILE_OR_FOLDER...
// A folder that is not there is taken as empty (a target's crash folder exists once it has a
// finding). Exits 0 when every input was taken (the target aborts, or a sanitizer stops it,
// otherwise), 1 when there was nothing to replay or a file could not be read.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path given = argv[i];
    std::error_code error;
    if (fs::is_directory(given, error)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(given)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(given, error)) {
      inputs.push_back(given);
    } else {
      std::printf("%s: not there, no inputs from it\n", given.c_str());
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "nothing to replay: give the target's corpus and crash folders\n");
    return 1;
  }
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot be read\n", input.c_str());
      return 1;
    }
    std::printf("%s (%zu bytes)\n", input.c_str(), bytes.size());
    std::fflush(stdout);  // so that a crash shows which input it was
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
