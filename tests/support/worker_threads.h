// Workers as threads, for tests of what several workers do together (vgpu::ThreadWorkers and
// what is built over it): runs body(w) on a thread per worker and returns what each threw.
#pragma once

#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace mirrorlab::testing {

// Runs `body(w)` for w = 0 .. workers-1, each on a thread of its own; what they threw, by worker
// ("" for one that did not).
template <class Body>
std::vector<std::string> on_every_worker(int workers, Body body) {
  std::vector<std::string> errors(static_cast<std::size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        body(w);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(w)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

}  // namespace mirrorlab::testing
