// A deliberate data race, for the TSan build only: the test tsan_guard.reports_a_race_in_our_code
// runs this under the suite's own TSAN_OPTIONS (suppressions included) and passes only when
// ThreadSanitizer reports the race in deliberately_racing_writer. It shows that the Mesa
// suppressions (tests/tsan-suppressions.txt) hide nothing of ours.
#include <cstdio>
#include <thread>

namespace {

int shared_counter = 0;  // written by two threads with no synchronisation: the race

// noinline: the report's top frame must be this function, which the test looks for.
[[gnu::noinline]] void deliberately_racing_writer() {
  for (int i = 0; i < 1000; ++i) shared_counter = shared_counter + 1;
}

}  // namespace

int main() {
  std::thread a(deliberately_racing_writer);
  std::thread b(deliberately_racing_writer);
  a.join();
  b.join();
  std::printf("counter %d (TSan should have reported a data race above)\n", shared_counter);
  return 0;
}
