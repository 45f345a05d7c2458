// For tests of code that must never hang (a replica failing inside an all-reduce): runs the body
// on a thread of its own and, when it has not returned within the limit, fails the test loudly
// and ends the test program at once, since threads stuck in a barrier cannot be joined.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>

namespace mirrorlab::testing {

template <class Body>
void within_seconds(double seconds, const std::string& what, Body body) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << what << " did not end within " << seconds << " s: it hangs";
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  done.get();  // rethrows what the body threw (a failed ASSERT is already recorded)
}

}  // namespace mirrorlab::testing
