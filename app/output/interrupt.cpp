#include "app/output/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>

#include "core/io/output_file.h"

namespace mirrorlab::app {
namespace {

// Lock-free, so reading and writing them from a signal handler is safe.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
// Set by stop_at_once_on_interrupt(): a command with nothing to save stops at the first signal.
std::atomic<bool> g_at_once{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void say(const char* text) {
  // write(2) is async-signal-safe; stdio is not. Nothing to do if it fails.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

// When the first signal came (CLOCK_MONOTONIC, ns): the same signal again within kEcho is that
// one delivered twice (`timeout -s INT` signals the process and then its group), not a second
// request; a person's second Ctrl-C comes later.
std::atomic<long long> g_first_at{0};
static_assert(std::atomic<long long>::is_always_lock_free);
constexpr long long kEcho = 250'000'000;

long long now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return static_cast<long long>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

[[noreturn]] void stop_now(int signal) {
  core::remove_temporary_files_signal_safe();  // the old files stay as they were
  ::_exit(128 + signal);
}

extern "C" void on_signal(int signal) {
  int none = 0;
  const bool first = g_signal.compare_exchange_strong(none, signal);
  if (first) g_first_at.store(now_ns());
  if (signal == SIGPIPE) {
    // The reader of the output went away (`| head`, or Ctrl-C took `| tee` with it): the run
    // stops as if interrupted, silently (where would it say so?), and saves what it has. Every
    // later write to the pipe raises it again: that is no second interrupt.
    if (g_at_once.load()) stop_now(signal);
    return;
  }
  if (g_at_once.load()) stop_now(signal);
  if (!first && none == signal && now_ns() - g_first_at.load() < kEcho) return;  // an echo
  if (!first) {
    say("\nmirrorlab: second interrupt: stopping now, without saving\n");
    stop_now(signal);
  }
  say(signal == SIGINT
          ? "\nmirrorlab: interrupted (Ctrl-C): finishing the step under way, then saving what "
            "the run has; press Ctrl-C again to stop at once\n"
      : signal == SIGHUP
          ? "\nmirrorlab: hung up (SIGHUP): finishing the step under way, then saving what the "
            "run has\n"
          : "\nmirrorlab: terminated (SIGTERM): finishing the step under way, then saving what "
            "the run has\n");
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and waits in progress go on; the run checks the flag
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaction(signal, &action, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

void stop_at_once_on_interrupt() { g_at_once.store(true); }

int interrupt_signal() { return g_signal.load(); }

const char* interrupt_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP (its terminal closed)";
    case SIGPIPE:
      return "SIGPIPE (the reader of its output went away)";
    default:
      return "a signal";
  }
}

}  // namespace mirrorlab::app
