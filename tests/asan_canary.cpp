// Deliberate bugs, for the ASan + UBSan build only: the asan_guard tests run this under the
// suite's own sanitizer options (tests/lsan-suppressions.txt included) and pass only when the
// sanitizer reports the bug where it is (ASan: the function named for it; UBSan: this file and
// the line), and the program then stops. They show
// that the build catches each kind, that UBSan stops rather than prints and goes on
// (-fno-sanitize-recover=all), and that the leak suppressions hide nothing of ours.
//   asan_canary overflow|leak|signed-overflow
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace {

// noinline and volatile: ASan's reports must name these functions, and nothing may be folded away.
[[gnu::noinline]] int deliberately_overflowing_reader(int n) {
  int* values = new int[static_cast<std::size_t>(n)];
  std::memset(values, 0, sizeof(int) * static_cast<std::size_t>(n));
  volatile int at = n;  // one past the end
  const int value = values[at];
  delete[] values;
  return value;
}

void* volatile kept = nullptr;

[[gnu::noinline]] void deliberately_leaking_allocator() {
  kept = std::malloc(4096);
  std::memset(kept, 1, 4096);
  kept = nullptr;  // the only pointer to it is gone: a leak at exit
}

[[gnu::noinline]] int deliberately_overflowing_adder(int a) {
  volatile int b = std::numeric_limits<int>::max();
  return a + b;  // signed overflow for any a > 0: undefined behaviour
}

}  // namespace

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "overflow") == 0) {
    std::printf("read %d\n", deliberately_overflowing_reader(argc + 6));
  } else if (std::strcmp(what, "leak") == 0) {
    deliberately_leaking_allocator();
    std::printf("leaked 4096 bytes: LeakSanitizer reports them at exit\n");
    return 0;
  } else if (std::strcmp(what, "signed-overflow") == 0) {
    std::printf("sum %d\n", deliberately_overflowing_adder(argc));
  } else {
    std::fprintf(stderr, "give overflow, leak or signed-overflow\n");
    return 2;
  }
  std::printf("still running after the bug: the sanitizer did not stop it\n");
  return 0;
}
